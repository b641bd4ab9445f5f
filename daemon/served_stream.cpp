// ServedStream: opening, seeking, the delivery loop's steps, stats.
#include "daemon/served_stream.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

#include "loader/loader_internals.h"
#include "loader/slot_count.h"
#include "protocol/stream_request.h"

namespace forkfeed {

using json = nlohmann::json;

Result<ServedStream::Opened> ServedStream::open(std::uint64_t id, const LoaderOptions& options,
                                                std::string_view state, std::shared_ptr<WorkerPool> pool,
                                                Admission::Ticket ticket, json about) {
  auto loader = Loader::open(options, state, std::move(pool));
  if (!loader.ok()) return loader.status();
  auto channel = ConsumerChannel::create();
  if (!channel.ok()) return channel.status();
  const Loader::SharedMemory memory = (*loader)->shared_memory();
  Opened opened;
  // The client gets the arena read-only: it can read batches, not write the daemon's memory.
  opened.fds.emplace_back(
      ::open(("/proc/self/fd/" + std::to_string(memory.fd)).c_str(), O_RDONLY | O_CLOEXEC));
  if (!opened.fds.back().valid()) return Status::FromErrno("reopening the arena read-only", errno);
  for (int fd : {channel->memfd(), channel->delivered_fd(), channel->returned_fd()}) {
    opened.fds.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!opened.fds.back().valid()) return Status::FromErrno("duplicating the consumer channel's fds", errno);
  }
  opened.stream.reset(new ServedStream(id, std::move(loader).value(), std::move(channel).value(),
                                       slot_count(options), std::move(ticket), std::move(about)));
  const ServedStream& s = *opened.stream;
  const PassPosition::Seek at = LoaderInternals::position(*s.loader_);
  opened.reply = to_json(StreamOpened{
      id, s.generation_, at.epoch, at.position, s.loader_->batches_per_epoch(), s.loader_->samples_per_epoch(),
      s.lent_.capacity(), options.workers, s.loader_->dataset().classes().size(), options.size, options.dtype,
      resolve(options.layout, options.dtype), memory.size, memory.slot_bytes, LoaderInternals::order_key(*s.loader_),
      s.loader_->dataset().classes()});
  spdlog::info("stream {} opened for pid {} (uid {}): up to {} workers, {} slots, rank {}/{}, arena {:.1f} MiB", id,
               s.about_.value("pid", 0), s.about_.value("uid", 0), options.workers, s.lent_.capacity(),
               options.rank, options.world_size, memory.size / 1048576.0);
  return opened;
}

ServedStream::ServedStream(std::uint64_t id, std::unique_ptr<Loader> loader, ConsumerChannel channel,
                           std::uint32_t slots, Admission::Ticket ticket, json about)
    : id_(id),
      ticket_(std::move(ticket)),
      loader_(std::move(loader)),
      channel_(std::move(channel)),
      memory_(loader_->shared_memory()),
      lent_(slots),
      about_(std::move(about)),
      opened_(std::chrono::steady_clock::now()) {}

ServedStream::~ServedStream() {
  spdlog::info("stream {} of pid {} closed; {} batches delivered", id_, about_.value("pid", 0),
               delivered_batches_);
}

Result<json> ServedStream::seek(const json& body) {
  auto epoch = get_uint(body, "epoch", ~std::uint64_t{0});
  if (!epoch.ok()) return Status::InvalidArgument("seek: " + epoch.status().message());
  auto position = get_uint(body, "position", loader_->batches_per_epoch());
  if (!position.ok()) return Status::InvalidArgument("seek: " + position.status().message());
  if (Status s = LoaderInternals::seek(*loader_, {*epoch, *position}); !s.ok()) return s;
  // Whatever is still in the ring belongs to the old pass: the client drops it.
  generation_ += 1;
  fatal_sent_ = false;
  return json{{"generation", generation_}};
}

bool ServedStream::can_produce() const {
  // The ring's head is the client's to write: a bogus one only stalls its own stream.
  return !fatal_sent_ && !lent_.full() && channel_.block().deliveries.size() < kChannelCapacity;
}

void ServedStream::produce() {
  auto next = loader_->next();
  // Woken (interrupt()) to answer the client or to stop: nothing to deliver, the pass is
  // unchanged and the next produce() goes on with it.
  if (!next.ok() && next.status().code() == Status::Code::kCancelled && !LoaderInternals::broken(*loader_)) return;
  DeliveryRecord d{};
  if (!next.ok()) {
    const Status& s = next.status();
    d.kind = DeliveryKind::kError;
    d.code = static_cast<std::uint32_t>(s.code());
    d.fatal = LoaderInternals::broken(*loader_) ? 1 : 0;  // a bad file fails its batch; a broken loader stays
    std::snprintf(d.message, sizeof d.message, "%s", s.message().c_str());
    d.epoch = loader_->epoch();
    const PassPosition::Seek at = LoaderInternals::position(*loader_);
    d.index = at.epoch == d.epoch ? at.position : loader_->batches_per_epoch();
    if (d.fatal != 0) fatal_sent_ = true;
  } else if (!next->has_value()) {
    d.kind = DeliveryKind::kEndOfPass;
    d.epoch = loader_->epoch();
    d.index = loader_->batches_per_epoch();
  } else {
    Batch& batch = **next;
    d = batch_delivery(batch, memory_.base);
    delivered_batches_ += 1;
    delivered_samples_ += batch.size();
    const LentBatches::Ticket ticket = lent_.lend(std::move(batch));
    d.handle = ticket.handle;
    d.tag = ticket.tag;
  }
  d.generation = generation_;
  (void)channel_.block().deliveries.try_push(d);  // can_produce() saw room; only this thread pushes
  channel_.ring_delivered();
}

void ServedStream::drain_returns() {
  for (std::uint32_t i = 0; i < kChannelCapacity; ++i) {
    auto r = channel_.block().returns.try_pop();
    if (!r) return;
    if (!lent_.give_back(r->handle, r->tag) && bad_returns_++ == 0) {
      spdlog::warn("stream {}: the client returned slot {} which it does not hold; ignored", id_, r->handle);
    }
  }
}

json ServedStream::stats() const {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_).count();
  json stats = about_;
  stats["stream"] = id_;
  write_loader_stats(loader_->stats(), stats);  // every batch the loader delivered is pushed
  stats["queue_depth"] = std::min<std::uint64_t>(channel_.block().deliveries.size(), kChannelCapacity);
  stats["lent_slots"] = lent_.count();
  stats["epoch"] = loader_->epoch();
  stats["uptime_s"] = seconds;
  stats["images_per_s"] = seconds > 0 ? delivered_samples_ / seconds : 0.0;
  return stats;
}

}  // namespace forkfeed
