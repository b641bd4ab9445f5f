// ServedStream: opening, seeking, the delivery loop's steps, stats.
#include "daemon/served_stream.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <string>

#include "loader/loader_internals.h"
#include "plan/slot_count.h"
#include "protocol/stream_request.h"

namespace forkfeed {

using json = nlohmann::json;

Result<ServedStream::Opened> ServedStream::open(std::uint64_t id, const StreamPlan& plan,
                                                std::string_view state, bool demand,
                                                std::shared_ptr<WorkerPool> pool, Admission::Ticket ticket,
                                                json about) {
  const LoaderOptions& options = plan.options();
  // What its fields add to its slots is known with its index: charged to the ticket.
  auto loader = LoaderInternals::open(
      plan, state, std::move(pool),
      [&ticket](std::uint64_t bytes, const std::string& what) { return ticket.grow(bytes, what); });
  if (!loader.ok()) return loader.status();
  // Its slots are its options'; the workers it keeps busy at once, the ticket's.
  LoaderInternals::limit_in_flight(**loader, ticket.workers() * options.prefetch);
  LoaderInternals::lend_only(**loader);  // the client copies aside what it holds, if it must
  // Where the stream starts, for the reply. On demand, its epoch starts with nothing
  // wanted: before the first next(), nothing was issued yet.
  const PassPosition::Seek at = LoaderInternals::position(**loader);
  if (demand) {
    if (Status s = LoaderInternals::begin_demand(**loader, at.epoch); !s.ok()) return s;
  }
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
                                       slot_count(options), demand, std::move(ticket), std::move(about)));
  const ServedStream& s = *opened.stream;
  // Before any batch, the loader's skips are the index's.
  const LoaderStats at_open = s.loader_->stats();
  opened.stream->skipped_counted_ = at_open.skipped_samples;
  opened.reply = to_json(
      StreamOpened{id, s.generation_, at.epoch, at.position, s.loader_->batches_per_epoch(),
                   s.loader_->samples_per_epoch(), s.lent_.capacity(), s.ticket_.workers(),
                   s.loader_->dataset().classes().size(), options.size, options.dtype,
                   resolve(options.layout, options.dtype), memory.size, memory.slot_bytes,
                   at_open.skipped_samples, at_open.skipped_bytes, LoaderInternals::order_key(*s.loader_),
                   s.loader_->dataset().classes(), LoaderInternals::slot_fields(*s.loader_)});
  spdlog::info(
      "stream {} opened for pid {} (uid {}): up to {} workers, {} slots, rank {}/{}, arena {:.1f} MiB", id,
      s.about_.value("pid", 0), s.about_.value("uid", 0), s.ticket_.workers(), s.lent_.capacity(),
      options.rank, options.world_size, memory.size / 1048576.0);
  return opened;
}

ServedStream::ServedStream(std::uint64_t id, std::unique_ptr<Loader> loader, ConsumerChannel channel,
                           std::uint32_t slots, bool demand, Admission::Ticket ticket, json about)
    : id_(id),
      ticket_(std::move(ticket)),
      loader_(std::move(loader)),
      channel_(std::move(channel)),
      memory_(loader_->shared_memory()),
      lent_(slots),
      demand_(demand),
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
  if (Status s = demand_ ? LoaderInternals::begin_demand(*loader_, *epoch)
                         : LoaderInternals::seek(*loader_, {*epoch, *position});
      !s.ok()) {
    return s;
  }
  // Whatever is still in the ring belongs to the old pass: the client drops it.
  generation_ += 1;
  fatal_sent_ = false;
  return json{{"generation", generation_}};
}

Status ServedStream::want(const json& body) {
  if (!demand_) return Status::InvalidArgument("want: the stream was not opened on demand");
  auto generation = get_uint(body, "generation", ~std::uint64_t{0});
  if (!generation.ok()) return Status::InvalidArgument("want: " + generation.status().message());
  if (!body.contains("batches") || !body["batches"].is_array() || body["batches"].size() > kChannelCapacity) {
    return Status::InvalidArgument("want: batches must be an array of at most " +
                                   std::to_string(kChannelCapacity) + " batch indices");
  }
  if (*generation != generation_) return Status::Ok();  // it crossed a seek
  for (const json& b : body["batches"]) {
    if (!b.is_number_unsigned())
      return Status::InvalidArgument("want: a batch index must be an unsigned integer");
    // More wanted than slots can hold would only wait; bounded so that a client cannot
    // grow the loader's list without end.
    if (LoaderInternals::wanted(*loader_) >= 2 * std::size_t{kChannelCapacity}) {
      return Status::InvalidArgument("want: more batches wanted than the stream has slots for");
    }
    if (Status s = LoaderInternals::want(*loader_, b.get<std::uint64_t>()); !s.ok()) {
      return Status::InvalidArgument("want: " + s.message());
    }
  }
  return Status::Ok();
}

bool ServedStream::can_produce() const {
  // The ring's head is the client's to write: a bogus one only stalls its own stream.
  return !fatal_sent_ && !lent_.full() && channel_.block().deliveries.size() < kChannelCapacity &&
         (!demand_ || LoaderInternals::wanted(*loader_) > 0);
}

void ServedStream::produce() {
  DeliveryRecord d = demand_ ? next_wanted() : next_delivery();
  if (d.kind == DeliveryKind{}) return;  // interrupted: nothing to deliver
  d.generation = generation_;
  // What the loader skipped since the last record goes with this one (what does not fit
  // in its field, with the next).
  const std::uint64_t skipped = loader_->stats().skipped_samples - skipped_counted_;
  d.skipped =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(skipped, std::numeric_limits<std::uint32_t>::max()));
  skipped_counted_ += d.skipped;
  (void)channel_.block().deliveries.try_push(d);  // can_produce() saw room; only this thread pushes
  channel_.ring_delivered();
}

// Woken (interrupt()) to answer the client or to stop, the loader gives Cancelled:
// nothing to deliver (a record of no kind), the pass is unchanged and the next produce()
// goes on with it.
DeliveryRecord ServedStream::next_delivery() {
  auto next = loader_->next();
  if (!next.ok()) {
    if (next.status().code() == Status::Code::kCancelled && !LoaderInternals::broken(*loader_)) return {};
    const PassPosition::Seek at = LoaderInternals::position(*loader_);
    return error_record(next.status(),
                        at.epoch == loader_->epoch() ? at.position : loader_->batches_per_epoch());
  }
  if (!next->has_value()) {
    DeliveryRecord d{};
    d.kind = DeliveryKind::kEndOfPass;
    d.epoch = loader_->epoch();
    d.index = loader_->batches_per_epoch();
    return d;
  }
  return lend(std::move(**next));
}

DeliveryRecord ServedStream::next_wanted() {
  auto next = LoaderInternals::next_wanted(*loader_);
  if (!next.ok()) {
    if (next.status().code() == Status::Code::kCancelled && !LoaderInternals::broken(*loader_)) return {};
    return error_record(next.status(), 0);  // broken: the stream's batch no longer matters
  }
  if (!next->batch.ok()) return error_record(next->batch.status(), next->index);
  if (!next->batch->has_value()) {
    DeliveryRecord d{};
    d.kind = DeliveryKind::kEmpty;
    d.epoch = loader_->epoch();
    d.index = next->index;
    return d;
  }
  return lend(std::move(**next->batch));
}

DeliveryRecord ServedStream::lend(Batch batch) {
  const SlotGeometry& slots = LoaderInternals::slot_geometry(*loader_);
  DeliveryRecord d = batch_delivery(
      batch, memory_.base, {slots.slots_offset, slots.slot_stride, &LoaderInternals::slot_fields(*loader_)});
  delivered_batches_ += 1;
  delivered_samples_ += batch.size();
  const LentBatches::Ticket ticket = lent_.lend(std::move(batch));
  d.handle = ticket.handle;
  d.tag = ticket.tag;
  return d;
}

DeliveryRecord ServedStream::error_record(const Status& s, std::uint64_t index) {
  DeliveryRecord d{};
  d.kind = DeliveryKind::kError;
  d.code = static_cast<std::uint32_t>(s.code());
  d.fatal = LoaderInternals::broken(*loader_) ? 1 : 0;  // a bad file fails its batch; a broken loader stays
  std::snprintf(d.message, sizeof d.message, "%s", s.message().c_str());
  d.epoch = loader_->epoch();
  d.index = index;
  if (d.fatal != 0) fatal_sent_ = true;
  return d;
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

std::uint64_t ServedStream::worker_ns() const { return LoaderInternals::worker_ns(*loader_); }

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
