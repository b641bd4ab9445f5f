// FanInPlan: which daemon makes which batch of a pass drawn from several daemons (a
// fan-in, client/remote/fan_in_link.h), and what came back. A pure value: it decides, its owner
// sends the wants and hands the batches out. The rules:
// - by credit: the next batch goes to the daemon with the most free receive slots, so
//   that each makes batches in proportion to its speed and a slow one holds up nobody
//   while the others have room; the last free slot of a daemon is kept for the batch the
//   pass waits for;
// - the batch the pass waits for can always come: when it cannot land anywhere (the
//   caller holds batches, later ones fill the rest), later batches that came and wait in
//   receive slots are evicted — dropped, and asked for again later;
// - in order: batches are handed out by index, each once; a copy that comes after the
//   first (or outside the pass) is a duplicate, to drop;
// - a lost daemon's batches that did not come go back to the plan, lowest first;
// - a daemon that holds batches and delivered nothing for `overdue` is stalled: its
//   batches go to the others as well (the first copy wins), and it gets no new ones until
//   it delivers again. Only while another daemon delivers: alone, it has no one to stall
//   for.
// Its times are its owner's clock: FanInLink's counts only time spent waiting for the
// daemons (waiting_clock.h), so that a trainer's step makes no daemon overdue.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace forkfeed {

class FanInPlan {
 public:
  using Clock = std::chrono::steady_clock;

  // A daemon of the fan-in, by index from 0; down until up().
  std::uint32_t add_daemon();
  // Daemon `d` can take batches (it joined, or joined again).
  void up(std::uint32_t d);
  // Daemon `d` is gone: what it held and did not deliver goes back to the plan. How many
  // batches that took from it.
  std::uint64_t lost(std::uint32_t d);
  // Forgets the last daemon added. REQUIRES: it is down (never up, or lost) and no batch
  // of the pass came from it.
  void remove_last();

  // A new pass: batches [position, end) to hand out; nothing wanted of anyone.
  void start(std::uint64_t position, std::uint64_t end);

  // What to want of whom now, and which batches that came to evict (drop: they are
  // asked for again later). `free_slots(d)`: daemon d's receive slots that hold nothing.
  struct Want {
    std::uint32_t daemon;
    std::vector<std::uint64_t> batches;
  };
  struct Assignment {
    std::vector<Want> wants;
    std::vector<std::uint64_t> evicted;
  };
  Assignment assign(const std::function<std::uint32_t(std::uint32_t)>& free_slots, Clock::time_point now);

  // Batch `index` came from daemon `d`: `first` when it is the batch's first copy (keep
  // it), else a duplicate or not of the pass (drop it); `waited` since it was wanted of d.
  struct Arrival {
    bool first = false;
    Clock::duration waited{};
  };
  Arrival arrived(std::uint32_t d, std::uint64_t index, Clock::time_point now);

  // The batch to hand out next, and whether it came.
  std::uint64_t head() const { return next_; }
  bool head_arrived() const { return arrived_.contains(next_); }
  // REQUIRES: head_arrived()
  void handed_out() { arrived_.erase(next_++); }
  bool over() const { return next_ >= end_; }

  // Stalls every daemon that holds batches and delivered nothing for `overdue` up to
  // `now`, while another daemon delivers: their batches go back to the plan (for the
  // others). Those stalled now.
  struct Stall {
    std::uint32_t daemon;
    std::uint64_t taken;  // batches that went back to the plan
  };
  std::vector<Stall> stall_overdue(Clock::time_point now, Clock::duration overdue);
  // When the next daemon would be overdue, if one holds batches and another delivers.
  std::optional<Clock::time_point> next_overdue(Clock::duration overdue) const;

  bool stalled(std::uint32_t d) const { return daemons_[d].stalled; }
  std::size_t outstanding(std::uint32_t d) const { return daemons_[d].wanted.size(); }
  // Whether any daemon that is up holds a batch not yet come.
  bool anything_outstanding() const;

 private:
  struct Daemon {
    bool up = false;
    bool stalled = false;
    std::map<std::uint64_t, Clock::time_point> wanted;  // not come yet, and when wanted
    Clock::time_point busy_since{};                     // when `wanted` last became non-empty
    Clock::time_point last_arrival{};
  };
  // Whether a daemon that is up and not stalled will bring batch `index`.
  bool covered(std::uint64_t index) const;
  // Whether daemon `d` can be stalled now: it is up, not stalled, holds batches, and
  // another daemon up and not stalled could take them.
  bool stallable(std::uint32_t d) const;
  // Batch `index` goes back to the plan unless it came or is covered.
  bool take_back(std::uint64_t index);
  // The first batch the pass waits for: not come yet.
  std::uint64_t awaited() const;
  std::optional<std::uint32_t> pick(std::uint64_t index, std::vector<std::uint32_t>& room) const;
  // Makes room for the awaited batch when it cannot land anywhere; see assign().
  void make_room(const std::function<std::uint32_t(std::uint32_t)>& free_slots,
                 std::vector<std::uint32_t>& room, Assignment& out,
                 const std::function<void(std::uint32_t, std::uint64_t)>& give);
  // Batches that came from daemon `d` after `index`, highest first.
  std::vector<std::uint64_t> later_arrivals(std::uint32_t d, std::uint64_t index) const;

  std::vector<Daemon> daemons_;
  std::uint64_t next_ = 0, end_ = 0;
  std::uint64_t planned_ = 0;                                    // batches below it were wanted of someone
  std::set<std::uint64_t> requeued_;                             // below planned_: to want again
  std::map<std::uint64_t, std::vector<std::uint32_t>> holders_;  // wanted, not come: of whom
  std::map<std::uint64_t, std::uint32_t> arrived_;               // come, not handed out: from whom
};

}  // namespace forkfeed
