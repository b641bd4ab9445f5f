// DaemonConnection: a client's end of the forkfeedd socket — connect, one request and
// its reply at a time, and noticing that the daemon went away.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "forkfeed/client.h"
#include "forkfeed/status.h"
#include "protocol/frame.h"

namespace forkfeed {

class DaemonConnection {
 public:
  // Whether requests after the hello wait at most the connect timeout each (forkfeed-ctl)
  // or as long as it takes (a stream: open_stream builds a loader).
  enum class RequestTimeout { kNone, kSameAsConnect };
  // Connects and says hello. Fails within `timeout` (roughly) with an error naming the
  // socket when nothing answers, and with the daemon's reason when it refuses.
  static Result<DaemonConnection> connect(const std::string& socket_path,
                                          std::chrono::milliseconds timeout = kDefaultConnectTimeout,
                                          RequestTimeout requests = RequestTimeout::kNone);
  // Only the connect, within `timeout`, no hello: the caller's first request (sent with
  // send_request, its reply read once fd() is readable) is what proves a daemon answers.
  // For forkfeed-gateway, whose one thread must never wait on a daemon.
  static Result<DaemonConnection> open(const std::string& socket_path, std::chrono::milliseconds timeout);

  struct Reply {
    nlohmann::json body;
    std::vector<UniqueFd> fds;
  };
  // Sends a request and waits for its reply; an {"ok":false} reply becomes its Status.
  // Once the connection is lost every call returns the same error.
  Result<Reply> request(MessageType type, const nlohmann::json& body);
  // request() in two halves, for a caller that polls fd() in between (forkfeed-gateway):
  // the request goes out, and later its reply is read (once fd() is readable, it does
  // not wait for more than the rest of the frame).
  Status send_request(MessageType type, const nlohmann::json& body);
  // An unanswered message (a want), sent without reading what the daemon sent: it may
  // go out while a reply is on its way.
  Status send(MessageType type, const nlohmann::json& body);
  Result<Reply> receive_reply();

  // Non-blocking: the error that ended the connection (the daemon closed it, died, or
  // sent a notice), or Ok while it is up.
  Status check();
  // The error that ended the connection, or Ok.
  const Status& lost() const { return lost_; }
  int fd() const { return socket_.get(); }
  const std::string& path() const { return path_; }

 private:
  DaemonConnection(UniqueFd socket, std::string path) : socket_(std::move(socket)), path_(std::move(path)) {}
  // Records why the connection is over (once) and returns it.
  Status lose(const std::string& why);
  // Reads what the daemon sent unasked: a notice, or the end of the connection.
  Status read_unasked();
  // After a write failed: the reason the daemon sends when it stops reading to close the
  // connection, if it comes soon.
  std::optional<std::string> reason_after_failed_write();

  UniqueFd socket_;
  std::string path_;
  Status lost_;
  std::chrono::milliseconds request_timeout_{0};  // zero: none
};

}  // namespace forkfeed
