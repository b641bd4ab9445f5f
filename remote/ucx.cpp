// The UCX handles: creation with forkfeed's settings, and their release.
#include "remote/ucx.h"

#include <poll.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <utility>

namespace forkfeed {
namespace {

using Clock = std::chrono::steady_clock;

Status ucx_error(const UcxApi& api, const std::string& what, ucs_status_t status) {
  return Status::IoError(what + " failed: " + api.error(status));
}

// forkfeed's UCX settings:
// - UCX checks its endpoints every 20 s by default; forkfeed wants a vanished peer
//   noticed in about a second (unless UCX_KEEPALIVE_INTERVAL says otherwise). A peer that
//   is only busy, not progressing its worker, still has a live connection: the check
//   does not take it for dead.
// - The tcp receive segment the caller asked for (`tcp_segment`, 0 for none), set only
//   where tcp may be used: UCX warns (on stdout, into a tool's --json) of a setting no
//   transport takes.
void apply_settings(const UcxApi& api, ucp_config_t* config, std::uint64_t tcp_segment) {
  if (std::getenv("UCX_KEEPALIVE_INTERVAL") == nullptr)
    (void)api.ucp_config_modify(config, "KEEPALIVE_INTERVAL", "1s");
  if (tcp_segment != 0) {
    // As ucp_config_modify names a transport's setting: without the transport's prefix.
    (void)api.ucp_config_modify(config, "RX_SEG_SIZE", std::to_string(tcp_segment).c_str());
  }
}

constexpr char kTcpUnreadable[] =
    "UCX could not read its tcp transport's configuration (UCX_TCP_RX_SEG_SIZE or another UCX_TCP_ "
    "variable, in the environment or a ucx.conf; UCX's own error says which): correct or unset it";
constexpr char kNotBytes[] =
    ": forkfeed must know the tcp segment UCX receives in, in bytes; set a size such as 512K, or unset it";

// A UCX variable as the environment sets it, "UCX_TCP_RX_SEG_SIZE=-1 (UCX reads it as
// inf)", else as UCX printed it (`printed`): a message names what the user wrote.
std::string setting(const char* name, std::string_view printed) {
  const char* set = std::getenv(name);
  if (set == nullptr || printed == set) return std::string(name) + "=" + std::string(printed);
  return std::string(name) + "=" + set + " (UCX reads it as " + std::string(printed) + ")";
}

// What UCX prints of its configuration ("UCX_TLS=all" a line), as `ucx_info -c` does.
std::string printed_configuration(const UcxApi& api) {
  char* text = nullptr;
  std::size_t size = 0;
  FILE* stream = ::open_memstream(&text, &size);
  if (stream == nullptr) return {};
  api.ucs_config_parser_print_all_opts(stream, "UCX_", UCS_CONFIG_PRINT_CONFIG, api.ucs_config_global_list);
  std::fclose(stream);
  std::string printed(text, size);
  std::free(text);
  return printed;
}

// The value of `name` in `printed` (printed_configuration's lines); empty if absent.
std::string_view printed_value(std::string_view printed, std::string_view name) {
  for (std::size_t at = 0; at < printed.size();) {
    const std::size_t end = std::min(printed.find('\n', at), printed.size());
    const std::string_view line = printed.substr(at, end - at);
    if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == '=') {
      return line.substr(name.size() + 1);
    }
    at = end + 1;
  }
  return {};
}

}  // namespace

Result<UcxConfiguration> UcxConfiguration::read(const UcxApi& api) {
  const std::string printed = printed_configuration(api);
  UcxConfiguration configuration{
      .tls = std::string(printed_value(printed, "UCX_TLS")),
      .tcp_segment = std::string(printed_value(printed, "UCX_TCP_RX_SEG_SIZE")),
      .tcp_send_segment = std::string(printed_value(printed, "UCX_TCP_TX_SEG_SIZE"))};
  if (configuration.tls.empty()) {
    return Status::InvalidArgument(
        "UCX could not read its configuration (UCX_TLS or another UCX_ variable, in the environment or a "
        "ucx.conf; UCX's own error says which): correct or unset it (ucx_info -c shows what UCX reads)");
  }
  return configuration;
}

bool tls_may_use_tcp(std::string_view tls) {
  if (tls.empty()) return true;  // UCX's default: every transport
  std::string_view list = tls;
  const bool excluding = list.front() == '^';
  if (excluding) list.remove_prefix(1);
  bool named = false;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    named = named || name == "tcp" || name == "all";
    list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
  }
  return excluding != named;
}

std::optional<std::uint64_t> parse_ucx_size(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  std::string_view unit(end, text.data() + text.size() - end);
  if (!unit.empty() && (unit.back() == 'b' || unit.back() == 'B')) unit.remove_suffix(1);
  int shift = 0;
  if (unit.size() == 1) {
    switch (unit.front()) {
      case 'k':
      case 'K': shift = 10; break;
      case 'm':
      case 'M': shift = 20; break;
      case 'g':
      case 'G': shift = 30; break;
      default: return std::nullopt;
    }
  } else if (!unit.empty()) {
    return std::nullopt;
  }
  if (value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
  return value << shift;
}

Result<std::shared_ptr<UcxContext>> UcxContext::create(std::uint64_t tcp_segment) {
  auto loaded = UcxApi::get();
  if (!loaded.ok()) return loaded.status();
  const UcxApi* api = *loaded;
  // UCX's list of configuration tables grows as ucp_init loads transports: reading it
  // and initialising, one thread at a time.
  static std::mutex creating;
  const std::lock_guard<std::mutex> one_at_a_time(creating);
  auto configuration = UcxConfiguration::read(*api);
  if (!configuration.ok()) return configuration.status();
  std::optional<std::uint64_t> segment;  // the one its workers will use
  bool configured = false;               // by UCX's configuration, not forkfeed
  std::uint64_t set = 0;                 // forkfeed's, where UCX's configuration chose none
  if (tls_may_use_tcp(configuration->tls)) {
    segment = parse_ucx_size(configuration->tcp_segment);
    if (!segment) {
      // UCX prints no tcp setting at all when it cannot read one of them.
      return Status::InvalidArgument(configuration->tcp_segment.empty()
                                         ? std::string(kTcpUnreadable)
                                         : setting("UCX_TCP_RX_SEG_SIZE", configuration->tcp_segment) +
                                               kNotBytes);
    }
    // A ucx.conf that sets UCX's default itself reads as not configured: forkfeed's then
    // stands, and both ends still know it.
    configured = std::getenv("UCX_TCP_RX_SEG_SIZE") != nullptr || *segment != kUcxDefaultTcpSegment;
    if (!configured && tcp_segment != 0) segment = set = tcp_segment;
    // UCX opens no tcp interface, and so makes no worker, that receives in less than it
    // sends in; said here, before anything is connected, as the setting's own error.
    const auto sends = parse_ucx_size(configuration->tcp_send_segment);
    if (sends && *segment < *sends) {
      const std::uint64_t unset = tcp_segment != 0 ? tcp_segment : kUcxDefaultTcpSegment;  // without it
      const std::string receives = configured
                                       ? setting("UCX_TCP_RX_SEG_SIZE", configuration->tcp_segment)
                                       : "the tcp receive segment of " + std::to_string(*segment) + " bytes";
      return Status::InvalidArgument(
          receives + " is smaller than " + setting("UCX_TCP_TX_SEG_SIZE", configuration->tcp_send_segment) +
          ": UCX makes no tcp worker that receives in less than it sends in; set UCX_TCP_RX_SEG_SIZE to " +
          configuration->tcp_send_segment + " or more" +
          (configured && unset >= *sends ? ", or unset it" : "") + " (or lower UCX_TCP_TX_SEG_SIZE)");
    }
  }
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = api->ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
    return ucx_error(*api, "reading UCX's configuration (UCX_* variables)", s);
  }
  apply_settings(*api, config, set);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  ucp_context_h context = nullptr;
  const ucs_status_t s = api->ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context);
  api->ucp_config_release(config);
  if (s != UCS_OK) return ucx_error(*api, "initialising UCX (check UCX_TLS and UCX_NET_DEVICES)", s);
  std::shared_ptr<UcxContext> made(new UcxContext(api, context));
  made->tcp_segment_ = segment;
  made->tcp_segment_configured_ = configured;
  return made;
}

UcxContext::~UcxContext() {
  if (owner_.here()) api_->ucp_cleanup(context_);
}

Result<std::unique_ptr<UcxWorker>> UcxWorker::create(std::shared_ptr<UcxContext> context,
                                                     ucs_thread_mode_t mode) {
  const UcxApi& api = context->api();
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = mode;
  ucp_worker_h worker = nullptr;
  if (ucs_status_t s = api.ucp_worker_create(context->get(), &params, &worker); s != UCS_OK) {
    // UCX refuses a worker for this process's settings, which its log (stderr) names.
    return Status::IoError("creating a UCX worker failed: " + api.error(s) +
                           "; check this process's UCX_ variables (UCX_TLS, UCX_NET_DEVICES, UCX_TCP_*: UCX "
                           "says which on stderr)");
  }
  int fd = -1;
  if (ucs_status_t s = api.ucp_worker_get_efd(worker, &fd); s != UCS_OK) {
    api.ucp_worker_destroy(worker);
    return ucx_error(api, "getting the UCX worker's event fd", s);
  }
  return std::unique_ptr<UcxWorker>(new UcxWorker(std::move(context), worker, fd));
}

UcxWorker::~UcxWorker() {
  if (owner_.here()) api().ucp_worker_destroy(worker_);
}

void UcxWorker::progress() {
  while (api().ucp_worker_progress(worker_) != 0) {
  }
}

void UcxWorker::progress_and_arm() {
  while (true) {
    progress();
    if (api().ucp_worker_arm(worker_) != UCS_ERR_BUSY) return;
  }
}

Status UcxWorker::set_am_handler(unsigned id, ucp_am_recv_callback_t callback, void* arg) {
  ucp_am_handler_param_t param{};
  param.field_mask =
      UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  param.id = id;
  param.cb = callback;
  param.arg = arg;
  if (ucs_status_t s = api().ucp_worker_set_am_recv_handler(worker_, &param); s != UCS_OK) {
    return ucx_error(api(), "setting a UCX active message handler", s);
  }
  return Status::Ok();
}

Result<std::string> UcxWorker::address() const {
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  if (ucs_status_t s = api().ucp_worker_get_address(worker_, &address, &length); s != UCS_OK) {
    return ucx_error(api(), "getting the UCX worker's address", s);
  }
  std::string bytes(reinterpret_cast<const char*>(address), length);
  api().ucp_worker_release_address(worker_, address);
  return bytes;
}

Status UcxWorker::wait(ucs_status_ptr_t request, std::chrono::milliseconds timeout, const std::string& what) {
  if (request == nullptr) return Status::Ok();
  if (UCS_PTR_IS_ERR(request)) return ucx_error(api(), what, UCS_PTR_STATUS(request));
  const Clock::time_point deadline = Clock::now() + timeout;
  ucs_status_t s = UCS_INPROGRESS;
  while (true) {
    progress();
    s = api().ucp_request_check_status(request);
    if (s != UCS_INPROGRESS) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    if (api().ucp_worker_arm(worker_) == UCS_ERR_BUSY) continue;
    pollfd p{event_fd_, POLLIN, 0};
    (void)::poll(&p, 1, static_cast<int>(left.count()));
  }
  api().ucp_request_free(request);  // an unfinished one is released when it finishes
  if (s == UCS_INPROGRESS)
    return Status::DeadlineExceeded(what + " did not finish within " + std::to_string(timeout.count()) +
                                    " ms");
  return s == UCS_OK ? Status::Ok() : ucx_error(api(), what, s);
}

Result<UcxEndpoint> UcxEndpoint::connect(UcxWorker& worker, std::string_view address, ErrorCallback on_error,
                                         void* arg) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = on_error;
  params.err_handler.arg = arg;
  ucp_ep_h ep = nullptr;
  if (ucs_status_t s = worker.api().ucp_ep_create(worker.get(), &params, &ep); s != UCS_OK) {
    return ucx_error(worker.api(), "creating a UCX endpoint", s);
  }
  return UcxEndpoint(&worker, ep);
}

UcxEndpoint& UcxEndpoint::operator=(UcxEndpoint&& other) noexcept {
  if (this != &other) {
    close(false);
    worker_ = std::exchange(other.worker_, nullptr);
    ep_ = std::exchange(other.ep_, nullptr);
    owner_ = other.owner_;
  }
  return *this;
}

void UcxEndpoint::close(bool graceful) {
  if (ep_ == nullptr) return;
  if (!owner_.here()) {
    ep_ = nullptr;
    return;
  }
  UcxWorker* worker = worker_;
  (void)worker->wait(start_close(graceful), std::chrono::seconds(1), "closing a UCX endpoint");
}

ucs_status_ptr_t UcxEndpoint::start_close(bool graceful) {
  if (ep_ == nullptr) return nullptr;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = graceful ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t request = worker_->api().ucp_ep_close_nbx(std::exchange(ep_, nullptr), &param);
  return UCS_PTR_IS_ERR(request) ? nullptr : request;
}

Result<UcxMemory> UcxMemory::map(std::shared_ptr<UcxContext> context, void* base, std::size_t bytes,
                                 bool read_only) {
  ucp_mem_map_params_t params{};
  params.field_mask =
      UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_PROT;
  params.address = base;
  params.length = bytes;
  params.prot = read_only ? UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_REMOTE_READ
                          : UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE |
                                UCP_MEM_MAP_PROT_REMOTE_READ | UCP_MEM_MAP_PROT_REMOTE_WRITE;
  UcxMemory memory;
  if (ucs_status_t s = context->api().ucp_mem_map(context->get(), &params, &memory.memh_); s != UCS_OK) {
    return Status::IoError("registering " + std::to_string(bytes) +
                           " bytes with UCX failed: " + context->api().error(s) +
                           " (on a verbs fabric, RLIMIT_MEMLOCK must cover the batch arenas: ulimit -l)");
  }
  memory.context_ = std::move(context);
  return memory;
}

UcxMemory& UcxMemory::operator=(UcxMemory&& other) noexcept {
  if (this != &other) {
    reset();
    context_ = std::move(other.context_);
    memh_ = std::exchange(other.memh_, nullptr);
    owner_ = other.owner_;
  }
  return *this;
}

void UcxMemory::reset() {
  if (memh_ != nullptr && owner_.here()) context_->api().ucp_mem_unmap(context_->get(), memh_);
  memh_ = nullptr;
  context_.reset();
}

}  // namespace forkfeed
