// RemoteLink: a stream on a forkfeedd on another machine, through its forkfeed-gateway.
// Requests, replies, credits and the gateway's heartbeats go over a TCP control
// connection as forkfeedd's frames (ControlChannel); batches come over UCX, by rendezvous
// from the daemon's slot straight into a receive slot of this process's own arena (a
// memfd, registered with UCX once: UcxReceiver). The gateway sends a batch only for a
// credit, and the link gives a credit back for every receive slot freed (a Batch dropped,
// in any thread). The UCX worker is progressed by a thread of the link's own
// (ProgressThread), so that batches move and credits go back while the trainer computes,
// not only while it waits in next(); the link's calls (from the trainer's thread) and that
// thread take turns on its state, under one mutex (LinkState).
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/owner_process.h"
#include "base/unique_fd.h"
#include "client/remote/control_channel.h"
#include "client/remote/link_state.h"
#include "client/remote/progress_thread.h"
#include "client/remote/ucx_receiver.h"
#include "client/stream_link.h"
#include "forkfeed/client.h"
#include "remote/remote_wire.h"
#include "remote/ucx.h"

namespace forkfeed {

class RemoteLink final : public StreamLink {
 public:
  // Connects to the gateway at `daemon`, presents the token and opens a stream with
  // `request` (an open_stream body); the reply's body in `opened`. With `pin_device` >= 0
  // the receive arena is page-locked for that CUDA device (as a Loader's slots are).
  // `timeout` bounds the whole: the connect, the hello, the welcome over UCX and the
  // stream's opening (a daemon that takes longer is taken for hung: its gateway answers,
  // its forkfeedd does not).
  static Result<std::unique_ptr<RemoteLink>> open(const RemoteDaemon& daemon,
                                                  std::chrono::milliseconds timeout, int pin_device,
                                                  const nlohmann::json& request, nlohmann::json& opened);
  // open() in steps, for several links at once (FanInLink): start() connects (within
  // `timeout`) and says hello with the token; after each service(), opening() moves on
  // without waiting (the welcome over UCX, then the open_stream) and says true once the
  // stream is open, as open()'s; late() is the error of one that was not open in time
  // (`timeout` after start), saying what it waited for.
  static Result<std::unique_ptr<RemoteLink>> start(const RemoteDaemon& daemon,
                                                   std::chrono::milliseconds timeout);
  Result<bool> opening(const nlohmann::json& request, int pin_device, nlohmann::json& opened);
  Status late(std::chrono::milliseconds timeout);
  ~RemoteLink() override;

  Result<nlohmann::json> request(MessageType type, const nlohmann::json& body) override;
  std::optional<LinkDelivery> pop() override;
  Result<bool> wait(int interrupt_fd) override;
  Status check() override;
  void drop(const LinkDelivery& d) override;
  std::unique_ptr<detail::SlotLease> lend(const LinkDelivery& d) override;
  std::uint32_t held() const override;
  std::uint32_t slots() const override;
  bool pinned() const override;

  // For FanInLink, which draws one rank's pass from several links.
  using Clock = std::chrono::steady_clock;
  // request() in two halves, for requests to several links at once: the request goes
  // out; its reply, once service() has read it (nullopt until then).
  Status send_request(MessageType type, const nlohmann::json& body) {
    return control_.send_request(type, body);
  }
  std::optional<Result<nlohmann::json>> take_reply() { return control_.take_reply(); }
  const std::string& address() const { return state_.address; }
  // Asks the daemon's stream, opened on demand, for `batches` of the pass `generation`.
  Status want(std::uint64_t generation, std::span<const std::uint64_t> batches) {
    return control_.want(generation, batches);
  }
  // Receive slots neither holding a delivery nor lent: the most batches to want now.
  std::uint32_t free_slots() const;
  // Deliveries whose bytes are all in, not yet popped: they came while nobody called the
  // link too (its thread progresses the worker).
  std::uint32_t arrived() const;
  // Rendezvous receives in flight: once none is, the link is destroyed without a wait.
  std::uint32_t receiving() const {
    std::lock_guard lock(state_.mu);
    return receiver_.receiving();
  }
  // One wait on several links: service() each (reads the control connection, gives
  // credits); poll what add_poll_fds() added (readable when the link's thread brought news: a batch
  // in, the link lost); after_poll() each with its entries; service() again, then
  // lose_silent() those that brought nothing (heard() unchanged) for kRemoteSilence of
  // waiting (WaitingClock).
  void service();
  static constexpr std::size_t kPollFds = 3;
  void add_poll_fds(std::vector<pollfd>& fds) const;
  void after_poll(const pollfd* mine);
  // Messages read from the gateway so far (frames and deliveries): it changes when the
  // link hears anything.
  std::uint64_t heard() const {
    std::lock_guard lock(state_.mu);
    return state_.heard;
  }
  Status lose_silent();

 private:
  RemoteLink(std::string address, UniqueFd control, std::shared_ptr<UcxContext> context,
             std::unique_ptr<UcxWorker> worker);
  // After the open_stream reply: the receive arena, and its slots as credits.
  Status make_arena(const nlohmann::json& opened, int pin_device);
  // request(), lost if no reply came by `deadline`.
  Result<nlohmann::json> request(MessageType type, const nlohmann::json& body, Clock::time_point deadline);
  // Progresses until `until` holds (true), the link is lost or the gateway was silent for
  // kRemoteSilence of this call's waiting (its error), or `interrupt_fd` (if not -1) is
  // readable or `deadline` passed (false).
  Result<bool> progress_until(const std::function<bool()>& until, int interrupt_fd,
                              Clock::time_point deadline = Clock::time_point::max());

  OwnerProcess owner_;
  LinkState state_;  // first: the parts below hold it
  ControlChannel control_;
  UcxReceiver receiver_;   // after the control channel: it gives credits over it
  ProgressThread thread_;  // last: it runs on the others
  // How far opening() got: the hello sent, its reply taken (the welcome awaited), the
  // open_stream sent, the stream open.
  enum class Phase { kHello, kWelcome, kOpening, kOpen } phase_ = Phase::kHello;
};

}  // namespace forkfeed
