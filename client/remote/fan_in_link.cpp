// FanInLink: the members, their losses and returns, the pass in order (opening and joining:
// fan_in_open.cpp).
#include "client/remote/fan_in_link.h"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "loader/pass_position.h"
#include "loader/slot_pool.h"
#include "loader/stats_fields.h"

namespace forkfeed {

using json = nlohmann::json;

namespace {

// A lost daemon is tried again after this, doubled at each failure up to the most.
constexpr std::chrono::seconds kFirstRetry{1};
constexpr std::chrono::seconds kMostRetry{30};
// Trying a lost daemon again waits at most this long for it (next() waits meanwhile).
constexpr std::chrono::milliseconds kRejoinTimeout{2000};

std::uint64_t ns(std::chrono::steady_clock::duration d) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

}  // namespace

FanInLink::~FanInLink() = default;

void FanInLink::add(const RemoteDaemon& daemon) {
  Member m;
  m.daemon = daemon;
  m.stats.address = daemon.address;
  m.backoff = kFirstRetry;
  members_.push_back(std::move(m));
  (void)plan_.add_daemon();
}

void FanInLink::seek(std::vector<std::uint32_t> which, Clock::duration within) {
  const json body{{"epoch", epoch_}, {"position", 0}};
  std::erase_if(which, [&](std::uint32_t i) {
    const Status s = members_[i].link->send_request(MessageType::kSeek, body);
    if (!s.ok()) lose(i, s);
    return !s.ok();
  });
  const Clock::time_point deadline = waiting_.now() + within;
  while (!which.empty()) {
    for (std::uint32_t i : which) members_[i].link->service();
    std::erase_if(which, [&](std::uint32_t i) {
      Member& m = members_[i];
      if (!m.link) return true;
      auto reply = m.link->take_reply();
      if (!reply) {
        if (Status s = m.link->check(); !s.ok()) lose(i, s);
        return !m.link;
      }
      // The epoch was checked: a refusal, or a reply without a generation, is a daemon gone wrong.
      auto generation = reply->ok() ? get_uint(**reply, "generation", ~std::uint64_t{0})
                                    : Result<std::uint64_t>(reply->status());
      if (!generation.ok()) {
        lose(i, Status::Unavailable("the remote forkfeedd at " + m.daemon.address +
                                    " refused to start a pass: " + generation.status().message()));
      } else {
        m.generation = *generation;
      }
      return true;
    });
    if (which.empty()) break;
    if (waiting_.now() >= deadline) {
      for (std::uint32_t i : which) {
        lose(i,
             Status::Unavailable(
                 "the remote forkfeedd at " + members_[i].daemon.address + " did not start a pass within " +
                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(within).count()) +
                 " ms: a hung node?"),
             true);
      }
      break;
    }
    (void)poll(links(which), deadline - waiting_.now(), -1);
  }
  settle();
}

bool FanInLink::poll(const std::vector<RemoteLink*>& links, Clock::duration timeout, int interrupt_fd) {
  std::vector<pollfd> fds;
  for (RemoteLink* link : links) link->add_poll_fds(fds);
  fds.push_back({interrupt_fd, POLLIN, 0});
  const Clock::time_point began = Clock::now();
  if (::poll(fds.data(), fds.size(), poll_timeout_ms(timeout)) < 0 && errno != EINTR) {
    spdlog::warn("forkfeed: poll for the remote forkfeedd daemons failed: {}", std::strerror(errno));
  }
  waiting_.waited(began, Clock::now(), timeout);
  for (std::size_t k = 0; k < links.size(); ++k) links[k]->after_poll(&fds[k * RemoteLink::kPollFds]);
  return fds.back().revents != 0;
}

std::vector<RemoteLink*> FanInLink::links(const std::vector<std::uint32_t>& which) const {
  std::vector<RemoteLink*> out;
  for (std::uint32_t i : which) out.push_back(members_[i].link.get());
  return out;
}

FanInLink::Clock::duration FanInLink::silence(std::uint32_t i) {
  Member& m = members_[i];
  if (const std::uint64_t heard = m.link->heard(); heard != m.heard) {
    m.heard = heard;
    m.heard_at = waiting_.now();
  }
  return waiting_.now() - m.heard_at;
}

std::vector<std::uint32_t> FanInLink::up() const {
  std::vector<std::uint32_t> up;
  for (std::uint32_t i = 0; i < members_.size(); ++i) {
    if (members_[i].link) up.push_back(i);
  }
  return up;
}

bool FanInLink::any_up() const {
  return std::any_of(members_.begin(), members_.end(), [](const Member& m) { return m.link != nullptr; });
}

void FanInLink::lose(std::uint32_t i, const Status& why, bool silent) {
  Member& m = members_[i];
  if (!m.link) return;
  m.silent = silent;
  const std::uint64_t taken = plan_.lost(i);
  m.stats.reassigned += taken;
  m.stats.losses += 1;
  m.stats.up = false;
  m.stats.stalled = false;
  m.stats.last_error = why.message();
  retired_.push_back(std::move(m.link));
  m.retry_at = Clock::now() + m.backoff;
  last_loss_ = why;
  spdlog::warn("forkfeed: {}; its {} batch(es) of the pass in progress {}, and it is tried again in {} s",
               why.message(), taken, any_up() ? "go to the other daemons" : "wait for a daemon",
               std::chrono::duration_cast<std::chrono::seconds>(m.backoff).count());
}

void FanInLink::settle() {
  if (!failed_.ok() || settling_ || any_up()) return;
  settling_ = true;
  for (Member& m : members_) {
    if (!m.silent) m.retry_at = Clock::time_point::min();  // a hung one would only hold us up
  }
  rejoin(Clock::now());
  settling_ = false;
  if (any_up()) return;
  std::string each;
  for (const Member& member : members_) each += "; " + member.stats.last_error;
  // One daemon's error keeps its code (a lasting error of its loader is not a lost daemon),
  // and why it could not come back (other files, say) goes with it.
  const bool one = members_.size() == 1;
  const std::string& again = members_.front().stats.last_error;
  const std::string lost_one =
      last_loss_.message() + (again == last_loss_.message() ? "" : "; tried again: " + again);
  failed_ = Status::FromCode(one ? last_loss_.code() : Status::Code::kUnavailable,
                             (one ? lost_one : "lost every remote forkfeedd of this stream" + each) +
                                 (one ? "; restart it" : "; restart them") +
                                 ", then connect again with the last state() to continue exactly");
  spdlog::error("forkfeed: {}", failed_.message());
}

void FanInLink::rejoin(Clock::time_point now) {
  for (std::uint32_t i = 0; i < members_.size(); ++i) {
    Member& m = members_[i];
    if (m.link || now < m.retry_at || !failed_.ok()) continue;
    if (Status s = try_join(i, std::min(settings_.connect_timeout, kRejoinTimeout)); !s.ok()) {
      m.stats.last_error = s.message();
      m.backoff = std::min<Clock::duration>(m.backoff * 2, kMostRetry);
      m.retry_at = Clock::now() + m.backoff;
      // A daemon that answers and refuses (other files, say) is worth a warning; one still down is not.
      spdlog::log(unreachable(s) ? spdlog::level::debug : spdlog::level::warn,
                  "forkfeed: {} (tried again in {} s)", s.message(),
                  std::chrono::duration_cast<std::chrono::seconds>(m.backoff).count());
      continue;
    }
    m.backoff = kFirstRetry;
    spdlog::info("forkfeed: the remote forkfeedd at {} joined the stream at batch {} of epoch {}",
                 m.daemon.address, plan_.head(), epoch_);
  }
}

Status FanInLink::try_join(std::uint32_t i, std::chrono::milliseconds timeout) {
  Member& m = members_[i];
  json reply;
  if (Status s = connect(i, timeout, reply); !s.ok()) return s;
  seek({i}, timeout);
  if (!m.link) return Status::Unavailable(m.stats.last_error);  // lost again
  return Status::Ok();
}

void FanInLink::accept(std::uint32_t i, LinkDelivery d) {
  Member& m = members_[i];
  const DeliveryRecord& r = d.record;
  const bool batch = r.kind == DeliveryKind::kBatch;
  if (r.generation != m.generation || r.kind == DeliveryKind::kEndOfPass) {  // of a pass sought away
    if (batch) m.link->drop(d);
    return;
  }
  if (r.kind == DeliveryKind::kError && r.fatal != 0) {
    char message[kDeliveryMessageBytes];
    std::snprintf(message, sizeof message, "%s", r.message);
    auto code = static_cast<Status::Code>(r.code);
    if (code == Status::Code::kOk) code = Status::Code::kInternal;  // a lasting error is never Ok
    return lose(i, Status::FromCode(
                       code, "the remote forkfeedd at " + m.daemon.address + " cannot go on: " + message));
  }
  if (r.epoch != epoch_) {
    if (batch) m.link->drop(d);
    return lose(i, Status::Unavailable("the remote forkfeedd at " + m.daemon.address +
                                       " sent a batch of another epoch; is it another forkfeed version?"));
  }
  const FanInPlan::Arrival a = plan_.arrived(i, r.index, waiting_.now());
  m.stats.wait_ns += ns(a.waited);
  m.stats.stalled = false;
  if (!a.first) {
    m.stats.duplicates += 1;
    if (batch) m.link->drop(d);
    return;
  }
  m.stats.batches += 1;
  if (batch) m.stats.bytes += r.pixel_bytes;
  d.carrier = m.link.get();
  arrived_.emplace(r.index, d);
}

void FanInLink::collect() {
  if (!failed_.ok()) return;
  for (std::uint32_t i = 0; i < members_.size(); ++i) {
    Member& m = members_[i];
    if (!m.link) continue;
    if (Status s = m.link->check(); !s.ok()) {
      lose(i, s);
      continue;
    }
    while (m.link) {
      std::optional<LinkDelivery> d = m.link->pop();
      if (!d) break;
      accept(i, *d);
    }
    if (m.link) {
      if (Status s = m.link->check(); !s.ok()) lose(i, s);
    }
  }
  settle();
  if (!failed_.ok()) return;
  for (const FanInPlan::Stall& stall : plan_.stall_overdue(waiting_.now(), settings_.overdue)) {
    Member& m = members_[stall.daemon];
    m.stats.stalled = true;
    m.stats.reassigned += stall.taken;
    spdlog::warn(
        "forkfeed: the remote forkfeedd at {} delivered nothing for {} ms; its {} batch(es) are asked of "
        "the other daemons too",
        m.daemon.address, settings_.overdue.count(), stall.taken);
  }
  const FanInPlan::Assignment assignment =
      plan_.assign([this](std::uint32_t d) { return members_[d].link ? members_[d].link->free_slots() : 0u; },
                   waiting_.now());
  for (const std::uint64_t index : assignment.evicted) {  // room for the batch the pass waits for
    auto evicted = arrived_.extract(index);
    if (!evicted.empty() && evicted.mapped().record.kind == DeliveryKind::kBatch) {
      evicted.mapped().carrier->drop(evicted.mapped());
    }
  }
  for (const FanInPlan::Want& want : assignment.wants) {
    Member& m = members_[want.daemon];
    if (Status s = m.link->want(m.generation, want.batches); !s.ok()) lose(want.daemon, s);
  }
  settle();
  // Lost links go once nothing of theirs is in flight or waiting to be handed out.
  std::erase_if(retired_, [this](const std::unique_ptr<RemoteLink>& link) {
    link->service();
    if (link->receiving() > 0) return false;
    return std::none_of(arrived_.begin(), arrived_.end(),
                        [&](const auto& a) { return a.second.carrier == link.get(); });
  });
}

std::optional<LinkDelivery> FanInLink::take_head() {
  if (plan_.head_arrived()) {
    auto node = arrived_.extract(plan_.head());
    plan_.handed_out();
    LinkDelivery d = node.mapped();
    d.record.generation = generation_;
    // The Client's rule for an error: where the pass stands after it (the bad batch is consumed).
    if (d.record.kind == DeliveryKind::kError) d.record.index += 1;
    return d;
  }
  if (plan_.over() && !end_handed_) {
    end_handed_ = true;
    LinkDelivery d;
    d.record.kind = DeliveryKind::kEndOfPass;
    d.record.generation = generation_;
    d.record.epoch = epoch_;
    d.record.index = shape_.batches_per_epoch;
    return d;
  }
  return std::nullopt;
}

std::optional<LinkDelivery> FanInLink::pop() {
  if (!failed_.ok()) return std::nullopt;
  if (end_handed_) {  // the stream goes on with the next epoch, as a daemon's loader does
    if (Status s = begin(epoch_ + 1, 0); !s.ok() && failed_.ok()) failed_ = s;
    if (!failed_.ok()) return std::nullopt;
  }
  rejoin(Clock::now());  // between two batches
  collect();
  if (!failed_.ok()) return std::nullopt;
  return take_head();
}

Status FanInLink::check() {
  collect();
  return failed_;
}

Result<bool> FanInLink::wait(int interrupt_fd) {
  while (true) {
    collect();  // what came is read first: silence is judged after it
    if (!failed_.ok()) return failed_;
    if (plan_.head_arrived() || plan_.over() || end_handed_) return true;
    if (!plan_.anything_outstanding()) {
      // Nothing is on its way and nothing could be asked for: every receive slot holds a
      // batch the caller has not released.
      return every_slot_held();
    }
    bool lost = false;
    for (std::uint32_t i : up()) {
      if (silence(i) >= kRemoteSilence) {
        lose(i, members_[i].link->lose_silent(), true);
        lost = true;
      }
    }
    if (lost) {
      settle();
      continue;  // its batches go to the others
    }
    const Clock::time_point now = Clock::now();
    rejoin(now);
    const std::vector<std::uint32_t> polled = up();
    Clock::duration timeout = kRemoteSilence;
    for (std::uint32_t i = 0; i < members_.size(); ++i) {
      const Member& m = members_[i];
      timeout = std::min(timeout, m.link ? kRemoteSilence - silence(i) : std::max(m.retry_at, now) - now);
    }
    if (auto overdue = plan_.next_overdue(settings_.overdue))
      timeout = std::min(timeout, *overdue - waiting_.now());
    if (poll(links(polled), timeout, interrupt_fd)) return false;
  }
}

Status FanInLink::begin(std::uint64_t epoch, std::uint64_t position) {
  // What a daemon would refuse is refused here, before anything changes.
  if (Status s = PassPosition::check_epoch(epoch, "epoch"); !s.ok()) return s;
  if (position >= shape_.batches_per_epoch) return Status::InvalidArgument("a pass starts within its epoch");
  for (auto& [index, d] : arrived_) {
    if (d.record.kind == DeliveryKind::kBatch) d.carrier->drop(d);
  }
  arrived_.clear();
  epoch_ = epoch;
  end_handed_ = false;
  plan_.start(position, shape_.batches_per_epoch);
  // At once, so that a hung daemon holds the others up no longer than `overdue`.
  seek(up(), settings_.overdue);
  return failed_;
}

Result<json> FanInLink::request(MessageType type, const json& body) {
  if (!failed_.ok()) return failed_;
  switch (type) {
    case MessageType::kSeek: {
      auto epoch = get_uint(body, "epoch", ~std::uint64_t{0});
      auto position = get_uint(body, "position", shape_.batches_per_epoch);
      if (!epoch.ok() || !position.ok())
        return Status::InvalidArgument("a seek needs its epoch and position");
      if (Status s = begin(*epoch, *position); !s.ok()) return s;
      generation_ += 1;
      return json{{"ok", true}, {"generation", generation_}};
    }
    case MessageType::kStats: return stats();
    case MessageType::kClose: close(); return json{{"ok", true}};
    default:
      return Status::InvalidArgument("a remote Client sends no request of type " +
                                     std::to_string(static_cast<int>(type)));
  }
}

Result<json> FanInLink::stats() {
  std::vector<LoaderStats> each;  // of the daemons that answered, in order
  for (std::uint32_t i = 0; i < members_.size(); ++i) {
    Member& m = members_[i];
    if (!m.link) continue;
    auto reply = m.link->request(MessageType::kStats, json::object());
    if (!reply.ok()) {
      if (!m.link->check().ok()) lose(i, reply.status());
      continue;
    }
    auto s = parse_loader_stats(*reply);
    if (!s.ok()) return s.status();
    each.push_back(*s);
  }
  if (!failed_.ok()) return failed_;
  json body = json::object();
  write_loader_stats(merge_stats(each), body);  // by each field's rule (loader/stats_fields.h)
  return body;
}

void FanInLink::close() {
  for (Member& m : members_) {
    if (m.link) (void)m.link->request(MessageType::kClose, json::object());
  }
}

std::uint32_t FanInLink::held() const {
  std::uint32_t n = 0;
  for (const Member& m : members_) n += m.link ? m.link->held() : 0;
  for (const auto& link : retired_) n += link->held();
  return n;
}

std::uint32_t FanInLink::slots() const {
  std::uint32_t n = 0;
  for (const Member& m : members_) n += m.link ? m.link->slots() : 0;
  for (const auto& link : retired_) n += link->held();  // a batch it lent still counts
  return n;
}

bool FanInLink::pinned() const {
  return std::any_of(members_.begin(), members_.end(),
                     [](const Member& m) { return m.link && m.link->pinned(); });
}

std::vector<RemoteDaemonStats> FanInLink::daemons() const {
  std::vector<RemoteDaemonStats> out;
  for (const Member& m : members_) out.push_back(m.stats);
  return out;
}

Status FanInLink::add_daemon(const RemoteDaemon& daemon) {
  if (!failed_.ok()) return failed_;
  for (const Member& m : members_) {
    if (m.daemon.address == daemon.address) {
      return Status::InvalidArgument("the remote forkfeedd at " + daemon.address +
                                     " is already one of this Client's");
    }
  }
  add(daemon);
  const auto i = static_cast<std::uint32_t>(members_.size() - 1);
  if (Status s = try_join(i, settings_.connect_timeout); !s.ok()) {
    members_.pop_back();
    plan_.remove_last();
    return s;
  }
  spdlog::info("forkfeed: the remote forkfeedd at {} joined the stream at batch {} of epoch {}",
               daemon.address, plan_.head(), epoch_);
  return Status::Ok();
}

}  // namespace forkfeed
