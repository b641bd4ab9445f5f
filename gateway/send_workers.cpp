// SendWorkers: which worker sends to a client, by the tcp segment it receives in.
#include "gateway/send_workers.h"

#include <spdlog/spdlog.h>

#include <string>

namespace forkfeed {
namespace {

Result<std::unique_ptr<UcxWorker>> make_worker(std::uint64_t tcp_segment) {
  auto context = UcxContext::create(tcp_segment);
  if (!context.ok()) return context.status();
  return UcxWorker::create(std::move(context).value());
}

// As UCX prints a size: "1M", "512K", or bytes.
std::string ucx_size(std::uint64_t bytes) {
  if (bytes != 0 && bytes % (1024 * 1024) == 0) return std::to_string(bytes >> 20) + "M";
  return bytes != 0 && bytes % 1024 == 0 ? std::to_string(bytes >> 10) + "K" : std::to_string(bytes);
}

}  // namespace

Result<SendWorkers> SendWorkers::create() {
  auto own = make_worker(0);
  if (!own.ok()) return own.status();
  SendWorkers workers;
  workers.workers_.push_back(std::move(own).value());
  return workers;
}

Result<UcxWorker*> SendWorkers::for_client(std::optional<std::uint64_t> segment) {
  UcxWorker* own = workers_.front().get();
  const UcxContext& context = *own->context();
  const std::optional<std::uint64_t> sends = context.tcp_segment();
  if (!sends || !segment) return own;  // no tcp here, or a client that did not say
  if (!context.tcp_segment_configured() && *segment >= kLargeTcpSegment) {
    if (workers_.size() == 1) {
      auto large = make_worker(kLargeTcpSegment);
      if (!large.ok()) {
        spdlog::warn("forkfeed-gateway sends in tcp segments of {}, not {}: {}", ucx_size(*sends),
                     ucx_size(kLargeTcpSegment), large.status().message());
        return own;  // the client receives the smaller one too
      }
      workers_.push_back(std::move(large).value());
    }
    return workers_.back().get();
  }
  if (*segment >= *sends) return own;
  return Status::FailedPrecondition(
      "this trainer's UCX receives tcp segments of " + ucx_size(*segment) +
      " (UCX_TCP_RX_SEG_SIZE), smaller than the " + ucx_size(*sends) +
      " that forkfeed-gateway sends in: UCX would abort the trainer. Set UCX_TCP_RX_SEG_SIZE=" +
      ucx_size(*sends) + " or more for the trainer" + (*sends <= kLargeTcpSegment ? ", or unset it" : "") +
      (context.tcp_segment_configured() ? " (or lower it for forkfeedd)" : ""));
}

void SendWorkers::progress() {
  for (const auto& worker : workers_) worker->progress();
}

bool SendWorkers::arm() {
  for (const auto& worker : workers_) {
    if (worker->api().ucp_worker_arm(worker->get()) == UCS_ERR_BUSY) return false;
  }
  return true;
}

std::vector<int> SendWorkers::event_fds() const {
  std::vector<int> fds;
  for (const auto& worker : workers_) fds.push_back(worker->event_fd());
  return fds;
}

}  // namespace forkfeed
