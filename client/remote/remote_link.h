// RemoteLink: a stream on a forkfeedd on another machine, through its forkfeed-gateway.
// Requests, replies, credits and the gateway's heartbeats go over a TCP control
// connection as forkfeedd's frames; batches come over UCX, by rendezvous from the
// daemon's slot straight into a receive slot of this process's own arena (a memfd,
// registered with UCX once). The gateway sends a batch only for a credit, and the link
// gives a credit back for every receive slot freed (a Batch dropped, in any thread).
// The UCX worker is progressed by a thread of the link's own, so that batches move and
// credits go back while the trainer computes, not only while it waits in next(); the
// link's calls (from the trainer's thread) and that thread take turns on its state.
#pragma once

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/owner_process.h"
#include "base/unique_fd.h"
#include "client/stream_link.h"
#include "forkfeed/client.h"
#include "remote/remote_wire.h"
#include "remote/ucx.h"

namespace forkfeed {

class ReceiveArena;

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
  Status send_request(MessageType type, const nlohmann::json& body);
  std::optional<Result<nlohmann::json>> take_reply();
  const std::string& address() const { return address_; }
  // Asks the daemon's stream, opened on demand, for `batches` of the pass `generation`.
  Status want(std::uint64_t generation, std::span<const std::uint64_t> batches);
  // Receive slots neither holding a delivery nor lent: the most batches to want now.
  std::uint32_t free_slots() const;
  // Deliveries whose bytes are all in, not yet popped: they came while nobody called the
  // link too (its thread progresses the worker).
  std::uint32_t arrived() const;
  // Rendezvous receives in flight: once none is, the link is destroyed without a wait.
  std::uint32_t receiving() const {
    std::lock_guard lock(mu_);
    return receiving_;
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
    std::lock_guard lock(mu_);
    return heard_;
  }
  Status lose_silent();

 private:
  // A delivery on its way, by sequence number: ready once its bytes are in its slot.
  struct Arrival {
    DeliveryRecord record{};
    std::uint32_t slot = 0;
    std::uint64_t bytes = 0;  // kBatch: what came into the slot (nothing beyond it is read)
    bool ready = false;
  };
  struct Receive;  // one rendezvous receive in flight

  RemoteLink(std::string address, UniqueFd control, std::shared_ptr<UcxContext> context,
             std::unique_ptr<UcxWorker> worker);
  // After the open_stream reply: the receive arena, and its slots as credits.
  Status make_arena(const nlohmann::json& opened, int pin_device);
  Status lose(const std::string& why);
  // Ends the link with `message` as its error.
  Status fail(const std::string& message);
  // request(), lost if no reply came by `deadline`.
  Result<nlohmann::json> request(MessageType type, const nlohmann::json& body, Clock::time_point deadline);
  // Progresses until `until` holds (true), the link is lost or the gateway was silent for
  // kRemoteSilence of this call's waiting (its error), or `interrupt_fd` (if not -1) is
  // readable or `deadline` passed (false).
  Result<bool> progress_until(const std::function<bool()>& until, int interrupt_fd,
                              Clock::time_point deadline = Clock::time_point::max());
  // Reads what the control connection brought: replies, heartbeats, a notice.
  void read_control();
  void send_credits();
  // The link's thread: progresses the worker whenever it has work, gives the credits of
  // slots freed, and tells the link's waits (news_fd_) of what they wait for.
  void progress_loop();
  void wake_progress();
  void stop_progress();
  // Something a wait may be waiting for happened (a delivery ready, the welcome, a loss).
  void news() { news_ += 1; }

  static ucs_status_t on_delivery(void* arg, const void* header, std::size_t header_length, void* data,
                                  std::size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t on_welcome(void* arg, const void* header, std::size_t header_length, void* data,
                                 std::size_t length, const ucp_am_recv_param_t* param);
  static void on_received(void* request, ucs_status_t status, std::size_t length, void* user_data);
  ucs_status_t accept_delivery(const void* header, std::size_t header_length, void* data, std::size_t length,
                               const ucp_am_recv_param_t* param);

  const std::string address_;
  OwnerProcess owner_;
  UniqueFd control_;
  FrameReader reader_;
  std::shared_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  std::shared_ptr<ReceiveArena> arena_;  // shared with the leases of batches handed out
  Status lost_;
  std::uint64_t heard_ = 0;
  std::optional<std::string> reply_;  // the reply to the request in flight, once it came
  bool welcomed_ = false;             // the gateway's first message over UCX came
  // How far opening() got: the hello sent, its reply taken (the welcome awaited), the
  // open_stream sent, the stream open.
  enum class Phase { kHello, kWelcome, kOpening, kOpen } phase_ = Phase::kHello;
  std::map<std::uint64_t, Arrival> arrivals_;
  std::uint32_t receiving_ = 0;  // rendezvous receives in flight
  std::uint64_t next_sequence_ = 0;
  // The link's state, the worker and the control connection's writes, a thread at a time;
  // UCX calls back (accept_delivery, on_received, on_welcome) only under it.
  mutable std::recursive_mutex mu_;
  std::uint64_t news_ = 0;
  UniqueFd news_fd_;  // an eventfd the link's thread writes when news_ moved on
  UniqueFd wake_fd_;  // an eventfd that makes the link's thread look again (at its fds, at stopping_)
  bool stopping_ = false;
  std::unique_ptr<std::thread> progress_;  // never joined nor destroyed in a fork's child
};

}  // namespace forkfeed
