// FanInPlan: assigning by credit, arrivals, losses and stalls.
#include "client/remote/fan_in_plan.h"

#include <algorithm>
#include <utility>

namespace forkfeed {

std::uint32_t FanInPlan::add_daemon() {
  daemons_.emplace_back();
  return static_cast<std::uint32_t>(daemons_.size() - 1);
}

void FanInPlan::up(std::uint32_t d) {
  daemons_[d].up = true;
  daemons_[d].stalled = false;
}

std::uint64_t FanInPlan::lost(std::uint32_t d) {
  Daemon& daemon = daemons_[d];
  daemon.up = false;
  daemon.stalled = false;
  const auto wanted = std::exchange(daemon.wanted, {});
  for (const auto& [index, when] : wanted) {
    auto h = holders_.find(index);
    if (h == holders_.end()) continue;
    std::erase(h->second, d);
    if (h->second.empty()) holders_.erase(h);
  }
  std::uint64_t taken = 0;
  for (const auto& [index, when] : wanted) taken += take_back(index) ? 1 : 0;
  return taken;
}

void FanInPlan::remove_last() { daemons_.pop_back(); }

void FanInPlan::start(std::uint64_t position, std::uint64_t end) {
  next_ = planned_ = position;
  end_ = end;
  requeued_.clear();
  holders_.clear();
  arrived_.clear();
  for (Daemon& daemon : daemons_) {
    daemon.wanted.clear();
    daemon.stalled = false;
  }
}

bool FanInPlan::covered(std::uint64_t index) const {
  auto h = holders_.find(index);
  if (h == holders_.end()) return false;
  return std::any_of(h->second.begin(), h->second.end(),
                     [&](std::uint32_t d) { return daemons_[d].up && !daemons_[d].stalled; });
}

bool FanInPlan::take_back(std::uint64_t index) {
  if (index < next_ || index >= end_ || arrived_.contains(index) || covered(index)) return false;
  requeued_.insert(index);
  return true;
}

std::uint64_t FanInPlan::awaited() const {
  std::uint64_t index = next_;
  while (arrived_.contains(index)) ++index;
  return index;
}

// The daemon with the most room that does not hold `index` already; a daemon's last
// free slot only for the batch the pass waits for.
std::optional<std::uint32_t> FanInPlan::pick(std::uint64_t index, std::vector<std::uint32_t>& room) const {
  const bool awaited_now = index == awaited();
  std::optional<std::uint32_t> best;
  for (std::uint32_t d = 0; d < daemons_.size(); ++d) {
    if (room[d] == 0 || (room[d] < 2 && !awaited_now) || daemons_[d].wanted.contains(index)) continue;
    if (!best || room[d] > room[*best]) best = d;
  }
  return best;
}

FanInPlan::Assignment FanInPlan::assign(const std::function<std::uint32_t(std::uint32_t)>& free_slots,
                                        Clock::time_point now) {
  // A daemon's room: its free slots less the batches wanted of it that have not taken one.
  std::vector<std::uint32_t> room(daemons_.size(), 0);
  for (std::uint32_t d = 0; d < daemons_.size(); ++d) {
    if (!daemons_[d].up || daemons_[d].stalled) continue;
    const std::uint64_t free = free_slots(d), wanted = daemons_[d].wanted.size();
    room[d] = free > wanted ? static_cast<std::uint32_t>(free - wanted) : 0;
  }
  Assignment out;
  std::vector<Want>& wants = out.wants;
  auto give = [&](std::uint32_t d, std::uint64_t index) {
    Daemon& daemon = daemons_[d];
    if (daemon.wanted.empty()) daemon.busy_since = now;
    daemon.wanted.emplace(index, now);
    holders_[index].push_back(d);
    room[d] -= 1;
    auto want = std::find_if(wants.begin(), wants.end(), [&](const Want& w) { return w.daemon == d; });
    if (want == wants.end()) want = wants.insert(wants.end(), Want{d, {}});
    want->batches.push_back(index);
  };
  // Batches taken back first, lowest first; one that no daemon can take now waits.
  for (auto it = requeued_.begin(); it != requeued_.end();) {
    const std::uint64_t index = *it;
    if (index < next_ || arrived_.contains(index) || covered(index)) {
      it = requeued_.erase(it);
      continue;
    }
    const auto d = pick(index, room);
    if (!d) {
      ++it;
      continue;
    }
    give(*d, index);
    it = requeued_.erase(it);
  }
  while (planned_ < end_) {
    const auto d = pick(planned_, room);
    if (!d) break;
    give(*d, planned_++);
  }
  make_room(free_slots, room, out, [&](std::uint32_t d, std::uint64_t index) {
    if (index == planned_) {
      ++planned_;
    } else {
      requeued_.erase(index);
    }
    give(d, index);
  });
  return out;
}

std::vector<std::uint64_t> FanInPlan::later_arrivals(std::uint32_t d, std::uint64_t index) const {
  std::vector<std::uint64_t> later;
  for (auto it = arrived_.rbegin(); it != arrived_.rend() && it->first > index; ++it) {
    if (it->second == d) later.push_back(it->first);
  }
  return later;
}

// The awaited batch lands if a daemon that holds it has a free slot (its gateway sends
// only for a free slot) or one could be asked for it. Else slots that hold later batches
// are freed: one of a holder's (its next delivery may be the awaited batch), or as many
// of another daemon's as it needs to be asked for it. Each eviction frees a slot for good
// progress; an evicted batch is asked for again once the pass has room for it.
void FanInPlan::make_room(const std::function<std::uint32_t(std::uint32_t)>& free_slots,
                          std::vector<std::uint32_t>& room, Assignment& out,
                          const std::function<void(std::uint32_t, std::uint64_t)>& give) {
  const std::uint64_t a = awaited();
  if (a >= end_) return;
  auto evict = [&](std::uint32_t d, std::size_t count) {
    const std::vector<std::uint64_t> later = later_arrivals(d, a);
    for (std::size_t i = 0; i < count && i < later.size(); ++i) {
      arrived_.erase(later[i]);
      requeued_.insert(later[i]);
      out.evicted.push_back(later[i]);
    }
  };
  // Holders that are stalled do not count: they deliver nothing now.
  if (auto h = holders_.find(a); h != holders_.end()) {
    const auto delivering = [&](std::uint32_t d) { return daemons_[d].up && !daemons_[d].stalled; };
    for (std::uint32_t d : h->second) {
      if (delivering(d) && free_slots(d) > 0) return;  // it can come
    }
    for (std::uint32_t d : h->second) {
      if (delivering(d) && !later_arrivals(d, a).empty()) return evict(d, 1);
    }
    if (covered(a)) return;  // its holder's slots are the caller's or on their way: they free
  }
  if (pick(a, room)) return;  // assign() could not, but room may have come since
  // Another daemon, up and not stalled, with enough later batches to make room for it.
  std::optional<std::uint32_t> best;
  std::size_t best_need = 0;
  for (std::uint32_t d = 0; d < daemons_.size(); ++d) {
    const Daemon& daemon = daemons_[d];
    if (!daemon.up || daemon.stalled || daemon.wanted.contains(a)) continue;
    const std::size_t wanted = daemon.wanted.size(), free = free_slots(d);
    const std::size_t need = wanted + 1 > free ? wanted + 1 - free : 0;
    if (later_arrivals(d, a).size() < need) continue;
    if (!best || need < best_need) {
      best = d;
      best_need = need;
    }
  }
  if (!best) return;  // nothing to evict: the caller holds every slot, or batches are on their way
  evict(*best, best_need);
  room[*best] = 1;
  give(*best, a);
}

FanInPlan::Arrival FanInPlan::arrived(std::uint32_t d, std::uint64_t index, Clock::time_point now) {
  Arrival a;
  Daemon& daemon = daemons_[d];
  auto it = daemon.wanted.find(index);
  if (it == daemon.wanted.end()) return a;  // never wanted of it (in this pass)
  a.waited = now - it->second;
  daemon.wanted.erase(it);
  daemon.last_arrival = now;
  daemon.stalled = false;  // it delivers again
  if (auto h = holders_.find(index); h != holders_.end()) {
    std::erase(h->second, d);
    if (h->second.empty()) holders_.erase(h);
  }
  if (index < next_ || index >= end_ || arrived_.contains(index)) return a;
  arrived_.emplace(index, d);
  requeued_.erase(index);
  a.first = true;
  return a;
}

bool FanInPlan::stallable(std::uint32_t d) const {
  const Daemon& daemon = daemons_[d];
  if (!daemon.up || daemon.stalled || daemon.wanted.empty()) return false;
  for (std::uint32_t other = 0; other < daemons_.size(); ++other) {
    if (other != d && daemons_[other].up && !daemons_[other].stalled) return true;
  }
  return false;
}

std::vector<FanInPlan::Stall> FanInPlan::stall_overdue(Clock::time_point now, Clock::duration overdue) {
  std::vector<Stall> stalls;
  for (std::uint32_t d = 0; d < daemons_.size(); ++d) {
    Daemon& daemon = daemons_[d];
    if (!stallable(d)) continue;
    if (now - std::max(daemon.busy_since, daemon.last_arrival) < overdue) continue;
    daemon.stalled = true;
    Stall stall{d, 0};
    for (const auto& [index, when] : daemon.wanted) stall.taken += take_back(index) ? 1 : 0;
    stalls.push_back(stall);
  }
  return stalls;
}

std::optional<FanInPlan::Clock::time_point> FanInPlan::next_overdue(Clock::duration overdue) const {
  std::optional<Clock::time_point> next;
  for (std::uint32_t d = 0; d < daemons_.size(); ++d) {
    const Daemon& daemon = daemons_[d];
    if (!stallable(d)) continue;
    const Clock::time_point at = std::max(daemon.busy_since, daemon.last_arrival) + overdue;
    if (!next || at < *next) next = at;
  }
  return next;
}

bool FanInPlan::anything_outstanding() const {
  return std::any_of(daemons_.begin(), daemons_.end(),
                     [](const Daemon& d) { return d.up && !d.wanted.empty(); });
}

}  // namespace forkfeed
