// The UCX handles forkfeed holds, each with one owner: a context (the library's state
// and the memory it registers), a worker (progress, one thread), an endpoint (one peer),
// a registration of memory. Every call goes through UcxApi. In the child of a fork()
// (a trainer that forks with a remote Client open) releasing a handle calls nothing:
// UCX forbids a forked child to touch it, and the handles are the parent's. Peers find each other by
// worker address, exchanged on forkfeed's own TCP connection: no UCX listener, whose
// connection handling a stranger could reach.
//
// A worker is driven by events, not a spin: progress() until idle, arm(), then poll its
// event_fd() with the caller's other fds.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/owner_process.h"
#include "forkfeed/status.h"
#include "remote/ucx_api.h"

namespace forkfeed {

// UCX's tcp transport reads its socket a receive segment at a time (UCX_TCP_RX_SEG_SIZE)
// and sends a large message in fragments as large as its own receive segment: a receiver
// whose segment is smaller than its sender's is aborted by UCX. A larger segment costs
// fewer reads and copies per GB on both ends (tools/compare/remote_stream.py), so a
// trainer receives in kLargeTcpSegment and says so in its hello; the gateway sends to it
// from a worker whose segment is as large, and to any other client from one at its own.
inline constexpr std::uint64_t kUcxDefaultTcpSegment = 64 * 1024;  // UCX's default (1.13)
inline constexpr std::uint64_t kLargeTcpSegment = 512 * 1024;

// What forkfeed must know of UCX's configuration, as UCX itself reads it: its UCX_
// variables over its ucx.conf files ($UCX_CONFIG_DIR, $HOME, /etc/ucx), each value as UCX
// prints it ("64K", "1M"), whatever way it was written.
struct UcxConfiguration {
  std::string tls;               // UCX_TLS: "all", "tcp,sm", "^ib"
  std::string tcp_segment;       // UCX_TCP_RX_SEG_SIZE: "64K"; empty if UCX cannot read it
  std::string tcp_send_segment;  // UCX_TCP_TX_SEG_SIZE: "8K"; empty if UCX cannot read it
  static Result<UcxConfiguration> read(const UcxApi& api);
};

// Whether UCX may pick its tcp transport under UCX_TLS = `tls`: a list that names tcp
// (or all), or one of exclusions (^...) that does not.
bool tls_may_use_tcp(std::string_view tls);
// A size as UCX prints one ("65536", "64K", "1M", "2G"; a trailing B, any case); nullopt
// if it is not one.
std::optional<std::uint64_t> parse_ucx_size(std::string_view text);

class UcxContext {
 public:
  // Active messages, configured from UCX's own configuration (UCX_TLS, UCX_NET_DEVICES
  // ...), with the endpoint keepalive at 1 s unless UCX_KEEPALIVE_INTERVAL says otherwise,
  // and the tcp receive segment at `tcp_segment` bytes (0: UCX's default) unless UCX's
  // configuration chose one. InvalidArgument, naming the variable as it was set, where
  // tcp may be used and UCX cannot read the segment it was given (forkfeed must know it:
  // a receiver of a smaller segment than its sender's is aborted by UCX), or where the
  // segment is smaller than UCX_TCP_TX_SEG_SIZE, which makes UCX refuse every worker.
  static Result<std::shared_ptr<UcxContext>> create(std::uint64_t tcp_segment = 0);
  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;

  const UcxApi& api() const { return *api_; }
  ucp_context_h get() const { return context_; }
  // The tcp receive segment this context's workers use, which is also the largest
  // fragment they send; nullopt where UCX_TLS leaves tcp out.
  std::optional<std::uint64_t> tcp_segment() const { return tcp_segment_; }
  // Whether UCX's configuration chose the segment (UCX_TCP_RX_SEG_SIZE in the
  // environment, or another size than UCX's default in a ucx.conf), not forkfeed.
  bool tcp_segment_configured() const { return tcp_segment_configured_; }

 private:
  UcxContext(const UcxApi* api, ucp_context_h context) : api_(api), context_(context) {}
  const UcxApi* api_;
  ucp_context_h context_;
  std::optional<std::uint64_t> tcp_segment_;
  bool tcp_segment_configured_ = false;
  OwnerProcess owner_;
};

class UcxWorker {
 public:
  // `mode`: UCS_THREAD_MODE_SINGLE for a worker only one thread ever calls;
  // UCS_THREAD_MODE_SERIALIZED for one that several threads call, one at a time (the
  // caller serializes them).
  static Result<std::unique_ptr<UcxWorker>> create(std::shared_ptr<UcxContext> context,
                                                   ucs_thread_mode_t mode = UCS_THREAD_MODE_SINGLE);
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  const UcxApi& api() const { return context_->api(); }
  const std::shared_ptr<UcxContext>& context() const { return context_; }
  ucp_worker_h get() const { return worker_; }
  // Readable when the worker has something to progress, once armed.
  int event_fd() const { return event_fd_; }

  // Runs callbacks until nothing is left to do.
  void progress();
  // Progresses, then arms the event fd: on return it is safe to poll event_fd().
  void progress_and_arm();
  Status set_am_handler(unsigned id, ucp_am_recv_callback_t callback, void* arg);
  // The worker's address, for a peer to connect to (opaque bytes).
  Result<std::string> address() const;
  // Progresses until `request` (a non-blocking call's result) completes, at most
  // `timeout`, and frees it; its error, or DeadlineExceeded.
  Status wait(ucs_status_ptr_t request, std::chrono::milliseconds timeout, const std::string& what);

 private:
  UcxWorker(std::shared_ptr<UcxContext> context, ucp_worker_h worker, int event_fd)
      : context_(std::move(context)), worker_(worker), event_fd_(event_fd) {}
  std::shared_ptr<UcxContext> context_;
  ucp_worker_h worker_;
  int event_fd_;
  OwnerProcess owner_;
};

// An endpoint's owner. Errors of the peer (gone, reset, unreachable) come to `on_error`
// with `arg` during the worker's progress; the endpoint must then be closed (forced).
class UcxEndpoint {
 public:
  using ErrorCallback = void (*)(void* arg, ucp_ep_h ep, ucs_status_t status);
  UcxEndpoint() = default;
  // To the worker whose address() is `address`.
  static Result<UcxEndpoint> connect(UcxWorker& worker, std::string_view address, ErrorCallback on_error,
                                     void* arg);
  UcxEndpoint(UcxEndpoint&& other) noexcept
      : worker_(std::exchange(other.worker_, nullptr)),
        ep_(std::exchange(other.ep_, nullptr)),
        owner_(other.owner_) {}
  UcxEndpoint& operator=(UcxEndpoint&& other) noexcept;
  ~UcxEndpoint() { close(false); }

  ucp_ep_h get() const { return ep_; }
  bool valid() const { return ep_ != nullptr; }
  // Flushes what was sent (when `graceful`; at most a second) and closes; forced when the
  // peer failed or the flush did not finish.
  void close(bool graceful);
  // Starts closing (flushing first when `graceful`) without waiting: the request to watch
  // (ucp_request_check_status, then ucp_request_free), or null when already closed. A
  // caller that serves other peers meanwhile must not wait on one that stopped answering.
  ucs_status_ptr_t start_close(bool graceful);

 private:
  UcxEndpoint(UcxWorker* worker, ucp_ep_h ep) : worker_(worker), ep_(ep) {}
  UcxWorker* worker_ = nullptr;
  ucp_ep_h ep_ = nullptr;
  OwnerProcess owner_;
};

// Memory registered with a context once, so that rendezvous transfers to and from it
// need no registration of their own (on a verbs fabric: pinned, the NIC's to read).
class UcxMemory {
 public:
  UcxMemory() = default;
  // `read_only`: the memory is only sent from (it may be mapped read-only).
  static Result<UcxMemory> map(std::shared_ptr<UcxContext> context, void* base, std::size_t bytes,
                               bool read_only);
  UcxMemory(UcxMemory&& other) noexcept
      : context_(std::move(other.context_)),
        memh_(std::exchange(other.memh_, nullptr)),
        owner_(other.owner_) {}
  UcxMemory& operator=(UcxMemory&& other) noexcept;
  ~UcxMemory() { reset(); }
  ucp_mem_h get() const { return memh_; }
  void reset();

 private:
  std::shared_ptr<UcxContext> context_;
  ucp_mem_h memh_ = nullptr;
  OwnerProcess owner_;
};

}  // namespace forkfeed
