// FanInLink: a remote Client's stream, drawn from one or more remote daemons (a fan-in).
// Each daemon serves a stream of the same dataset and options opened on demand: it makes
// only the batches this link wants of it. FanInPlan decides which daemon makes which
// batch (by credit; again elsewhere when one is lost or overdue); this link talks to
// the daemons — one RemoteLink each — and hands the batches to the Client in the pass's
// order, so that the Client's position, state() and generation rule work as over one
// link. A lost daemon is tried again with a growing back-off, at a batch boundary.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "client/remote/fan_in_plan.h"
#include "client/remote/remote_link.h"
#include "client/remote/waiting_clock.h"
#include "client/stream_link.h"
#include "forkfeed/client.h"
#include "protocol/stream_request.h"

namespace forkfeed {

class FanInLink final : public StreamLink {
 public:
  struct Settings {
    std::chrono::milliseconds connect_timeout;
    std::chrono::milliseconds overdue;
    int pin_device = -1;
    nlohmann::json request;  // the open_stream body, on demand
  };
  // Opens the stream on every daemon at once; the first reply (the pass the Client starts
  // with) in `opened`, its slots those of all. One that is not open within
  // connect_timeout (unreachable, or hung: its gateway answers, its forkfeedd does not)
  // is left out, to be tried again as a lost one is. Fails if a daemon refuses, or
  // serves another order (dataset, options), or none opened in time.
  static Result<std::unique_ptr<FanInLink>> open(const std::vector<RemoteDaemon>& daemons, Settings settings,
                                                 nlohmann::json& opened);
  ~FanInLink() override;

  // kSeek starts a pass on every daemon; kStats sums theirs; kClose closes them all.
  Result<nlohmann::json> request(MessageType type, const nlohmann::json& body) override;
  std::optional<LinkDelivery> pop() override;
  Result<bool> wait(int interrupt_fd) override;
  Status check() override;
  void drop(const LinkDelivery& d) override { d.carrier->drop(d); }
  std::unique_ptr<detail::SlotLease> lend(const LinkDelivery& d) override { return d.carrier->lend(d); }
  std::uint32_t held() const override;
  std::uint32_t slots() const override;
  bool pinned() const override;

  std::vector<RemoteDaemonStats> daemons() const;
  // A new daemon, joined to the pass at once (within connect_timeout); if it cannot
  // join, its error, and it is not added.
  Status add_daemon(const RemoteDaemon& daemon);

 private:
  using Clock = std::chrono::steady_clock;
  struct Member {
    RemoteDaemon daemon;
    std::unique_ptr<RemoteLink> link;  // null while lost
    std::uint64_t generation = 0;      // of its stream, as of its last seek
    Clock::time_point retry_at{};
    Clock::duration backoff{};
    bool silent = false;  // lost for silence: not tried again before its time
    // When its link last brought anything (on waiting_), and its heard() then.
    Clock::time_point heard_at{};
    std::uint64_t heard = 0;
    RemoteDaemonStats stats;
  };
  explicit FanInLink(Settings settings) : settings_(std::move(settings)) {}
  // Whether `s` says a daemon cannot be reached now (or is hung), rather than that it refuses.
  static bool unreachable(const Status& s);

  void add(const RemoteDaemon& daemon);
  // Opens member `i`'s stream within `timeout`, its reply in `reply`, and joins it.
  Status connect(std::uint32_t i, std::chrono::milliseconds timeout, nlohmann::json& reply);
  // Member `i` takes `link`, whose stream opened with `reply`; one that does not match
  // the first stream's order is an error.
  Status join(std::uint32_t i, std::unique_ptr<RemoteLink> link, const nlohmann::json& reply);
  // Connects member `i` (lost, or new) within `timeout` and starts the current pass on it.
  Status try_join(std::uint32_t i, std::chrono::milliseconds timeout);
  // Starts the current pass on demand on members `which`, at once; those that have not
  // answered `within` (of waiting), or refuse, are lost.
  void seek(std::vector<std::uint32_t> which, Clock::duration within);
  // One poll over `links` (and `interrupt_fd`, if not -1) for `timeout` at most, counted
  // on waiting_; true if interrupt_fd became readable.
  bool poll(const std::vector<RemoteLink*>& links, Clock::duration timeout, int interrupt_fd);
  std::vector<RemoteLink*> links(const std::vector<std::uint32_t>& which) const;
  // How long member `i` (up) has been silent on waiting_, as of what its link read last.
  Clock::duration silence(std::uint32_t i);
  // The members that are up.
  std::vector<std::uint32_t> up() const;
  // Member `i` is lost for `why`: its batches go to the others. `silent`: it stopped
  // answering (a hung node), rather than closed its connection.
  void lose(std::uint32_t i, const Status& why, bool silent = false);
  // When every member is lost: each that closed its connection (not a silent one) is
  // tried once more at once — a daemon restarted at its address comes back here — and
  // only if none answers does the link fail.
  void settle();
  // Tries the lost members whose time has come.
  void rejoin(Clock::time_point now);
  // Takes in what every member delivered, stalls the overdue, sends the wants.
  void collect();
  void accept(std::uint32_t i, LinkDelivery d);
  // The next delivery in the pass's order, if it came.
  std::optional<LinkDelivery> take_head();
  // Starts the pass at (epoch, position) on every member.
  Status begin(std::uint64_t epoch, std::uint64_t position);
  Result<nlohmann::json> stats();
  void close();
  bool any_up() const;

  const Settings settings_;
  // Silence and overdue count only time spent waiting for the daemons (waiting_clock.h).
  WaitingClock waiting_;
  StreamOpened shape_;      // the first daemon's stream: every other must match its order
  std::string shape_from_;  // that daemon's address
  std::vector<Member> members_;
  FanInPlan plan_;
  std::uint64_t epoch_ = 0;
  std::uint64_t generation_ = 0;  // the Client's: one more at each seek
  bool end_handed_ = false;       // the pass's end went out: the next pop starts the next epoch
  std::map<std::uint64_t, LinkDelivery> arrived_;  // by batch index: come, not handed out
  // Lost links, kept while a receive is in flight in them or a batch that came by them
  // waits in arrived_.
  std::vector<std::unique_ptr<RemoteLink>> retired_;
  Status failed_;     // every daemon lost, and none came back when tried once more
  Status last_loss_;  // why the last one was lost
  bool settling_ = false;
};

}  // namespace forkfeed
