// Listener: forkfeedd's Unix socket. At start a socket file left by a crashed daemon is
// replaced, but one a live daemon answers on is not stolen. The file is removed when
// the Listener goes — if it is still the one this Listener made.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/unique_fd.h"
#include "forkfeed/status.h"

namespace forkfeed {

class Listener {
 public:
  // Binds and listens at `path`, mode 0600 (0666 when `others_allowed`: SO_PEERCRED
  // decides then).
  static Result<Listener> bind(const std::string& path, bool others_allowed);
  Listener(Listener&&) = default;
  Listener& operator=(Listener&&) = default;
  ~Listener() { close(); }

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }

  struct Peer {
    UniqueFd socket;
    pid_t pid = 0;
    uid_t uid = 0;
  };
  // Accepts one connection; a Peer without a valid socket when none is waiting.
  Result<Peer> accept();
  // Stops listening and removes the socket file.
  void close();

 private:
  Listener(UniqueFd fd, std::string path, ino_t inode)
      : fd_(std::move(fd)), path_(std::move(path)), inode_(inode) {}
  UniqueFd fd_;
  std::string path_;
  ino_t inode_ = 0;
};

}  // namespace forkfeed
