// FanInLink::open: every daemon of a Client opened at once, within connect_timeout.
#include "client/remote/fan_in_link.h"

#include <spdlog/spdlog.h>

#include <string>
#include <vector>

namespace forkfeed {

using json = nlohmann::json;

namespace {

// A daemon's refusal, named where the Client has several and the message does not.
Status named(const Status& s, const RemoteDaemon& daemon, std::size_t daemons) {
  if (daemons < 2 || s.message().find(daemon.address) != std::string::npos) return s;
  return Status::FromCode(s.code(), "forkfeedd at " + daemon.address + ": " + s.message());
}

}  // namespace

bool FanInLink::unreachable(const Status& s) {
  return s.code() == Status::Code::kUnavailable || s.code() == Status::Code::kDeadlineExceeded ||
         s.code() == Status::Code::kIoError;  // a connection refused or reset
}

Result<std::unique_ptr<FanInLink>> FanInLink::open(const std::vector<RemoteDaemon>& daemons,
                                                   Settings settings, json& opened) {
  if (daemons.empty()) return Status::InvalidArgument("no remote forkfeedd address given");
  std::unique_ptr<FanInLink> link(new FanInLink(std::move(settings)));
  const auto timeout = link->settings_.connect_timeout;
  const std::size_t n = daemons.size();
  // Every daemon at once, so that one that never opens its stream (a hung node) holds the
  // others up no longer than connect_timeout.
  std::vector<std::unique_ptr<RemoteLink>> opening(n);
  std::vector<json> replies(n);
  std::vector<Status> errors(n);
  for (std::size_t i = 0; i < n; ++i) {
    link->add(daemons[i]);
    auto started = RemoteLink::start(daemons[i], timeout);
    if (!started.ok()) {
      if (!unreachable(started.status())) return started.status();  // no token, or no UCX here
      errors[i] = started.status();
      continue;
    }
    opening[i] = std::move(started).value();
  }
  const Clock::time_point deadline = Clock::now() + timeout;
  while (true) {
    std::vector<RemoteLink*> pending;
    for (std::size_t i = 0; i < n; ++i) {
      if (!opening[i] || !replies[i].is_null()) continue;
      opening[i]->service();
      auto open = opening[i]->opening(link->settings_.request, link->settings_.pin_device, replies[i]);
      if (!open.ok() && !unreachable(open.status()))
        return named(open.status(), daemons[i], n);  // it refuses
      if (!open.ok()) {
        errors[i] = open.status();
        opening[i].reset();
      } else if (!*open) {
        pending.push_back(opening[i].get());
      }
    }
    if (pending.empty()) break;
    if (Clock::now() >= deadline) {
      for (std::size_t i = 0; i < n; ++i) {
        if (opening[i] && replies[i].is_null()) {
          errors[i] = opening[i]->late(timeout);
          opening[i].reset();
        }
      }
      break;
    }
    (void)link->poll(pending, deadline - Clock::now(), -1);
  }
  // In the order given: the first daemon open sets the order every other must match.
  std::vector<std::string> unreached;
  json first;
  for (std::size_t i = 0; i < n; ++i) {
    Member& m = link->members_[i];
    if (opening[i]) {
      if (Status s = link->join(static_cast<std::uint32_t>(i), std::move(opening[i]), replies[i]); !s.ok())
        return s;
      if (first.is_null()) first = std::move(replies[i]);
      continue;
    }
    unreached.push_back(errors[i].message());
    m.stats.last_error = errors[i].message();
    m.retry_at = Clock::now() + m.backoff;
  }
  if (first.is_null()) {
    std::string why;
    for (const std::string& u : unreached) why += (why.empty() ? "" : "; ") + u;
    return Status::Unavailable(why);
  }
  for (const std::string& u : unreached) {
    spdlog::warn("forkfeed: {}; going on without it, and trying it again from time to time", u);
  }
  link->epoch_ = link->shape_.epoch;
  link->generation_ = link->shape_.generation;
  link->plan_.start(link->shape_.position, link->shape_.batches_per_epoch);
  first["slots"] = link->slots();
  opened = std::move(first);
  return link;
}

}  // namespace forkfeed
