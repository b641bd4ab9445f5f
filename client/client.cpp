// Client: a stream on forkfeedd with Loader's semantics. The daemon's loader runs
// ahead (prefetch) and pushes what its next() gave into the deliveries ring; this side
// counts what the caller actually took. So the position — and state(), reset(),
// set_epoch() — follow consumption, as they do for a Loader: every repositioning is a
// seek to an (epoch, position) computed here, after which the daemon stamps a new pass
// id and the records of older passes are dropped (their slots given back).
#include "forkfeed/client.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/logging.h"
#include "base/owner_process.h"
#include "base/unique_fd.h"
#include "client/daemon_connection.h"
#include "client/local_link.h"
#include "client/remote/fan_in_link.h"
#include "dataset/dataset_source.h"
#include "loader/batch_factory.h"
#include "loader/held_batches.h"
#include "loader/pass_position.h"
#include "loader/pass_yield.h"
#include "loader/slot_pool.h"
#include "plan/option_ranges.h"
#include "protocol/stream_request.h"
#include "remote/net_address.h"
#include "transport/arena_layout.h"

namespace forkfeed {
namespace {

using json = nlohmann::json;

}  // namespace

class Client::Impl {
 public:
  Impl(std::unique_ptr<StreamLink> link, FanInLink* remote, UniqueFd interrupt, const StreamOpened& opened)
      : link_(std::move(link)),
        remote_(remote),
        interrupt_(std::move(interrupt)),
        opened_(opened),
        fields_(std::make_shared<const SlotFields>(opened.fields)),
        position_(opened.batches_per_epoch, {opened.epoch, opened.position}),
        generation_(opened.generation) {
    yield_.start(opened.position, counts());
  }

  ~Impl() {
    // In a fork's child the stream is the parent's: its copy of the socket only closes.
    if (owner_.here() && link_->check().ok()) (void)link_->request(MessageType::kClose, json::object());
  }

  // `remote`: `link` when it is a remote Client's.
  static Result<std::unique_ptr<Impl>> open(std::unique_ptr<StreamLink> link, FanInLink* remote,
                                            const json& opened_body) {
    auto opened = parse_stream_opened(opened_body);
    if (!opened.ok()) return opened.status();
    UniqueFd interrupt(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!interrupt.valid()) return Status::FromErrno("eventfd for Client::interrupt", errno);
    return std::make_unique<Impl>(std::move(link), remote, std::move(interrupt), *opened);
  }

  Status check_process() const {
    return owner_.check("Client",
                        "connect a new Client in this process (the parent's stream goes on unaffected)");
  }

  Result<std::optional<Batch>> next() {
    if (Status s = check_process(); !s.ok()) return s;
    if (broken_reported_) return broken_;
    if (Status s = link_->check(); !s.ok()) return s;
    while (true) {
      std::optional<LinkDelivery> delivery = link_->pop();
      if (!delivery) {
        if (link_->held() >= link_->slots()) {
          // A lost daemon first: its receive slots no longer count, and the caller's
          // batches from it may be all that is left.
          if (Status s = link_->check(); !s.ok()) return s;
          // Every slot is in the caller's hands: the oldest batch becomes a copy, and its
          // slot goes back to the daemon, which fills it with what comes next.
          Result<bool> copied = held_->copy_oldest_aside(std::max<std::uint32_t>(opened_.workers, 1));
          if (!copied.ok()) return copied.status();
          if (!*copied) return every_slot_held();
          continue;
        }
        if (Status s = wait_for_delivery(); !s.ok()) return s;
        continue;
      }
      DeliveryRecord* d = &delivery->record;
      if (d->generation != generation_) {  // overtaken by a seek
        if (d->kind == DeliveryKind::kBatch) link_->drop(*delivery);
        continue;
      }
      // The skips on the way to the record count once the caller takes it, as a Loader
      // counts them (a batch it could not take leaves them with the record).
      if (d->kind != DeliveryKind::kBatch) skipped_samples_ += d->skipped;
      switch (d->kind) {
        case DeliveryKind::kBatch: return batch(*delivery);
        case DeliveryKind::kEmpty:  // every sample skipped: consumed, as a Loader does
          position_.delivered(d->epoch, d->index);
          continue;
        case DeliveryKind::kEndOfPass:
          position_.ended(d->epoch);
          if (Status s = yield_.at_end(d->epoch, counts()); !s.ok()) return s;
          return std::optional<Batch>();
        case DeliveryKind::kError: {
          d->message[kDeliveryMessageBytes - 1] = '\0';
          position_.failed_at(d->epoch, d->index);
          Status s = Status::FromCode(static_cast<Status::Code>(d->code), d->message);
          if (d->fatal != 0) {
            broken_ = s;
            broken_reported_ = true;
          }
          return s;
        }
      }
      return Status::Internal("forkfeedd sent a delivery of unknown kind " +
                              std::to_string(static_cast<std::uint32_t>(d->kind)));
    }
  }

  // write() is async-signal-safe; the eventfd wakes a poll in progress, and a later
  // one finds it readable.
  void interrupt() {
    if (!owner_.here()) return;  // the eventfd is shared with the parent's waits
    const std::uint64_t one = 1;
    (void)!::write(interrupt_.get(), &one, sizeof one);
  }

  // The rules are PassPosition's; the daemon is told where the pass starts.
  Status set_epoch(std::uint64_t epoch) {
    if (Status s = check_process(); !s.ok()) return s;
    if (Status s = PassPosition::check_epoch(epoch, "epoch"); !s.ok()) return s;
    if (auto seek = position_.on_set_epoch(epoch)) return start(*seek);
    return Status::Ok();
  }

  Status reset() {
    if (Status s = check_process(); !s.ok()) return s;
    if (auto seek = position_.on_reset()) return start(*seek);
    return Status::Ok();
  }

  std::string state() const { return position_.state(opened_.order); }

  Status load_state(std::string_view state) {
    if (Status s = check_process(); !s.ok()) return s;
    auto seek = position_.parse_state(state, opened_.order);
    if (!seek.ok()) return seek.status();
    if (auto start = position_.load(*seek)) return this->start(*start);
    return Status::Ok();
  }

  Result<LoaderStats> stats() {
    if (Status s = check_process(); !s.ok()) return s;
    auto reply = link_->request(MessageType::kStats, json::object());
    if (!reply.ok()) return reply.status();
    auto stats = parse_loader_stats(*reply);
    if (!stats.ok()) return stats;
    // What this caller took, as a Loader counts it; the daemon counts what it sent ahead.
    stats->pinned = link_->pinned();
    stats->delivered_batches = delivered_batches_;
    stats->delivered_samples = delivered_samples_;
    stats->skipped_samples = opened_.index_skipped_samples + skipped_samples_;
    stats->skipped_bytes = opened_.index_skipped_bytes;
    stats->copied_batches = held_->copied_batches();
    stats->copied_bytes = held_->copied_bytes();
    return stats;
  }

  std::uint64_t epoch() const { return position_.epoch(); }
  const StreamOpened& opened() const { return opened_; }
  std::vector<RemoteDaemonStats> daemons() const {
    return remote_ ? remote_->daemons() : std::vector<RemoteDaemonStats>{};
  }
  Status add_daemon(const RemoteDaemon& daemon) {
    if (Status s = check_process(); !s.ok()) return s;
    if (!remote_)
      return Status::InvalidArgument(
          "add_daemon: this Client reads from a forkfeedd on this host; connect to remote daemons "
          "(RemoteDaemon) to add more");
    if (auto where = parse_net_address(daemon.address, "the remote forkfeedd's address"); !where.ok())
      return where.status();
    return remote_->add_daemon(daemon);
  }

 private:
  // Asks the daemon to start a pass at |seek|.
  Status start(PassPosition::Seek seek) {
    auto reply = link_->request(MessageType::kSeek, json{{"epoch", seek.epoch}, {"position", seek.position}});
    if (!reply.ok()) return reply.status();
    auto generation = get_uint(*reply, "generation", ~std::uint64_t{0});
    if (!generation.ok())
      return Status::Internal("forkfeedd sent a malformed seek reply: " + generation.status().message());
    generation_ = *generation;
    (void)take_interrupt();  // an interrupt is for the pass it cut short
    position_.start(seek);
    yield_.start(seek.position, counts());
    return Status::Ok();
  }

  // Sleeps until the daemon pushed a delivery, the connection ended or interrupt() was
  // called. Only here, where next() would wait: a prefetched batch is never refused.
  Status wait_for_delivery() {
    auto arrived = link_->wait(interrupt_.get());
    if (!arrived.ok()) return arrived.status();
    if (!*arrived && take_interrupt()) {
      return Status::Cancelled(
          "interrupted while waiting for batch " + std::to_string(position_.position()) + " of epoch " +
          std::to_string(position_.epoch()) +
          " from forkfeedd (Client::interrupt); the pass is unchanged and next() goes on with it");
    }
    return Status::Ok();
  }

  PassYield::Counts counts() const { return {delivered_samples_, skipped_samples_}; }

  // Whether an interrupt was pending; clears it.
  bool take_interrupt() {
    std::uint64_t count = 0;
    return ::read(interrupt_.get(), &count, sizeof count) == static_cast<ssize_t>(sizeof count);
  }

  Result<std::optional<Batch>> batch(const LinkDelivery& delivery) {
    const DeliveryRecord& d = delivery.record;
    if (!batch_delivery_fits(d, delivery.bytes, sample_bytes(opened_.dtype, opened_.size),
                             opened_.order.batch_size)) {
      link_->drop(delivery);
      return Status::Internal("forkfeedd sent a batch outside its memory; is it another forkfeed version?");
    }
    // A stream of fields: the layout the reply gave (checked against its slots), read
    // only where what the samples wrote lies within what the delivery says it covers.
    const std::byte* slot = fields_->count > 0 ? batch_fields_slot(d, delivery.base, *fields_) : nullptr;
    if (fields_->count > 0 && slot == nullptr) {
      link_->drop(delivery);
      return Status::Internal(
          "forkfeedd sent a batch whose fields lie outside what it delivered; is it "
          "another forkfeed version?");
    }
    position_.delivered(d.epoch, d.index);
    delivered_batches_ += 1;
    delivered_samples_ += d.count;
    skipped_samples_ += d.skipped;
    const std::byte* base = delivery.base;
    const std::span<const std::byte> memory = batch_memory(d, base);
    BatchFactory::Parts parts{base + d.pixels_offset,
                              d.pixel_bytes,
                              opened_.dtype,
                              opened_.size,
                              d.count,
                              reinterpret_cast<const std::int64_t*>(base + d.labels_offset),
                              reinterpret_cast<const std::uint64_t*>(base + d.indices_offset),
                              d.epoch,
                              d.index,
                              opened_.layout,
                              memory,
                              place(delivery, memory)};
    Batch batch = BatchFactory::make(parts, link_->lend(delivery));
    if (slot != nullptr) BatchFactory::add_fields(batch, slot, fields_);
    return std::optional<Batch>(std::move(batch));
  }

  // Where `memory`, a delivered batch's, is read, to copy it aside when the caller holds
  // every slot: within its slot, whose pages are its own; else (an older daemon, which
  // does not say its slots' size) it is never copied.
  detail::SlotPlace place(const LinkDelivery& d, std::span<const std::byte> memory) const {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    if (d.window == nullptr || d.slot_bytes == 0 || d.slot % page != 0 || d.slot_bytes % page != 0) return {};
    const std::byte* slot = d.window->origin(d.slot) + d.slot;
    if (memory.data() < slot || memory.data() + memory.size() > slot + d.slot_bytes) return {};
    return {d.window, d.slot, d.slot_bytes, held_};
  }

  OwnerProcess owner_;
  std::unique_ptr<StreamLink> link_;
  FanInLink* remote_;   // link_, when the daemons are remote
  UniqueFd interrupt_;  // a non-blocking eventfd, readable while an interrupt is pending
  const StreamOpened opened_;
  // opened_.fields, shared with the Batches handed out (their fields' names view it).
  const std::shared_ptr<const SlotFields> fields_;

  // What the caller consumed, as a Loader counts it, and the daemon's id of the pass.
  PassPosition position_;
  std::uint64_t generation_;  // StreamOpened::generation, as of the last seek
  std::uint64_t delivered_batches_ = 0, delivered_samples_ = 0;  // handed to the caller
  std::uint64_t skipped_samples_ = 0;                            // carried by the records the caller took
  PassYield yield_;                                              // whether the pass gave the caller anything
  // The batches handed out and not yet released, for copying the oldest aside.
  const std::shared_ptr<HeldBatches> held_ = std::make_shared<HeldBatches>(loader_logger(), "client");
  Status broken_;
  bool broken_reported_ = false;
};

Result<std::unique_ptr<Client>> Client::connect(const std::string& socket_path, const LoaderOptions& options,
                                                std::string_view state) {
  StreamOptions stream;
  stream.loader = options;
  return connect(socket_path, stream, state);
}

namespace {

// The open_stream request of `options` and `state`; paths made absolute (the daemon's
// working directory is not this process's). The daemon never pins: a remote client pins
// its own receive arena.
json open_request(const StreamOptions& options, std::string_view state, bool demand) {
  StreamRequest request{options, std::string(state), demand};
  request.stream.loader.pin_memory_device = -1;
  request.stream.loader.image_folder = absolute_path(options.loader.image_folder);
  request.stream.loader.manifest = absolute_path(options.loader.manifest);
  request.stream.loader.shards = absolute_path(options.loader.shards);
  return to_json(request);
}

// What a Client may not choose because forkfeedd does, said rather than dropped.
Status check_client_options(const LoaderOptions& o) {
  if (o.weight != LoaderOptions{}.weight) {
    return Status::InvalidArgument("weight " + std::to_string(o.weight) +
                                   " is not a Client's to choose: forkfeedd gives the streams it serves "
                                   "equal shares of its workers' time; "
                                   "leave weight at 1, or use a Loader on a WorkerPool to weigh loaders");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Client>> Client::connect(const std::string& socket_path, const StreamOptions& options,
                                                std::string_view state) {
  if (Status s = check_client_options(options.loader); !s.ok()) return s;
  if (options.loader.pin_memory_device >= 0) {
    return Status::InvalidArgument(
        "pin_memory_device is not supported through a local forkfeedd (its memory is the daemon's); set it "
        "to "
        "-1 (page-lock batches in the trainer), use a Loader, or a remote forkfeedd (whose batches land in "
        "this "
        "process's memory)");
  }
  auto connection = DaemonConnection::connect(socket_path, options.connect_timeout);
  if (!connection.ok()) return connection.status();
  json opened;
  auto link = LocalLink::open(std::move(connection).value(), open_request(options, state, false), opened);
  if (!link.ok()) return link.status();
  auto impl = Impl::open(std::move(link).value(), nullptr, opened);
  if (!impl.ok()) return impl.status();
  return std::unique_ptr<Client>(new Client(std::move(impl).value()));
}

Result<std::unique_ptr<Client>> Client::connect(const RemoteDaemon& daemon, const StreamOptions& options,
                                                std::string_view state) {
  return connect(std::vector<RemoteDaemon>{daemon}, options, state);
}

Result<std::unique_ptr<Client>> Client::connect(const std::vector<RemoteDaemon>& daemons,
                                                const StreamOptions& options, std::string_view state) {
  std::string addresses;
  for (const RemoteDaemon& d : daemons) addresses += (addresses.empty() ? "" : ", ") + d.address;
  if (daemons.empty())
    return Status::InvalidArgument("no remote forkfeedd address given: give at least one HOST:PORT");
  if (options.dataset.empty()) {
    return Status::InvalidArgument(
        "a remote forkfeedd (" + addresses +
        ") serves only the datasets named in its config: set StreamOptions::dataset "
        "(forkfeed-ctl stats lists them), not a path");
  }
  if (Status s = check_client_options(options.loader); !s.ok()) return s;
  if (Status s = check_option("pin_memory_device", options.loader.pin_memory_device); !s.ok()) return s;
  if (options.overdue.count() <= 0) {
    return Status::InvalidArgument("overdue must be positive (milliseconds); got " +
                                   std::to_string(options.overdue.count()));
  }
  for (std::size_t i = 0; i < daemons.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (daemons[i].address == daemons[j].address) {
        return Status::InvalidArgument("the remote forkfeedd at " + daemons[i].address +
                                       " is given twice; give each daemon once");
      }
    }
  }
  json opened;
  FanInLink::Settings settings{options.connect_timeout, options.overdue, options.loader.pin_memory_device,
                               open_request(options, state, true)};
  auto link = FanInLink::open(daemons, std::move(settings), opened);
  if (!link.ok()) return link.status();
  FanInLink* remote = link->get();
  auto impl = Impl::open(std::move(link).value(), remote, opened);
  if (!impl.ok()) return impl.status();
  return std::unique_ptr<Client>(new Client(std::move(impl).value()));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::optional<Batch>> Client::next() { return impl_->next(); }
void Client::interrupt() { impl_->interrupt(); }
Status Client::set_epoch(std::uint64_t epoch) { return impl_->set_epoch(epoch); }
Status Client::reset() { return impl_->reset(); }
std::string Client::state() const { return impl_->state(); }
Status Client::load_state(std::string_view state) { return impl_->load_state(state); }
Status Client::check_process() const { return impl_->check_process(); }
std::uint64_t Client::epoch() const { return impl_->epoch(); }
std::uint64_t Client::batches_per_epoch() const { return impl_->opened().batches_per_epoch; }
std::uint64_t Client::samples_per_epoch() const { return impl_->opened().samples_per_epoch; }
std::uint64_t Client::dataset_size() const { return impl_->opened().order.dataset.samples; }
std::uint32_t Client::workers() const { return impl_->opened().workers; }
std::uint64_t Client::classes() const { return impl_->opened().classes; }
const std::vector<std::string>& Client::class_names() const { return impl_->opened().class_names; }
Result<LoaderStats> Client::stats() { return impl_->stats(); }
std::vector<RemoteDaemonStats> Client::daemons() const { return impl_->daemons(); }
Status Client::add_daemon(const RemoteDaemon& daemon) { return impl_->add_daemon(daemon); }

Client::Iterator Client::begin() {
  if (Status s = impl_->reset(); !s.ok()) throw Error(s);  // a new range-for is a new pass
  return Iterator(this);
}

}  // namespace forkfeed
