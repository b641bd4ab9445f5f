// FanInLink::open: every daemon of a Client opened at once, within connect_timeout; a daemon
// joins (at the open, or back from a loss) only if it makes the batches the others make.
#include "client/remote/fan_in_link.h"

#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "dataset/dataset_identity.h"

namespace forkfeed {

using json = nlohmann::json;

namespace {

// A daemon's refusal, named where the Client has several and the message does not.
Status named(const Status& s, const RemoteDaemon& daemon, std::size_t daemons) {
  if (daemons < 2 || s.message().find(daemon.address) != std::string::npos) return s;
  return Status::FromCode(s.code(), "forkfeedd at " + daemon.address + ": " + s.message());
}

// Why daemon stream `a` does not make the batches `b` makes, or "" when it does: the
// datasets are compared by their identities (one dataset at any path), the rest must be equal.
std::string stream_difference(const StreamOpened& a, const StreamOpened& b) {
  if (std::string what = dataset_difference(a.order.dataset, b.order.dataset); !what.empty()) {
    return "another dataset (" + what + ")";
  }
  OrderKey ka = a.order, kb = b.order;
  ka.dataset = kb.dataset = {};
  if (!(ka == kb && a.batches_per_epoch == b.batches_per_epoch && a.size == b.size && a.dtype == b.dtype &&
        a.layout == b.layout && a.classes == b.classes)) {
    return "the dataset in another order (the image size, dtype or layout differ)";
  }
  // Its batches are read with the layout of the first: the same fields, at the same places.
  if (!same_fields(a.fields, b.fields)) return "the dataset's fields laid out otherwise in a batch";
  return "";
}

}  // namespace

Status FanInLink::connect(std::uint32_t i, std::chrono::milliseconds timeout, json& reply) {
  auto link = RemoteLink::open(members_[i].daemon, timeout, settings_.pin_device, settings_.request, reply);
  if (!link.ok()) return link.status();
  return join(i, std::move(link).value(), reply);
}

Status FanInLink::join(std::uint32_t i, std::unique_ptr<RemoteLink> link, const json& reply) {
  Member& m = members_[i];
  auto opened = parse_stream_opened(reply);
  if (!opened.ok()) return opened.status();
  if (shape_from_.empty()) {
    shape_ = *opened;
    shape_from_ = m.daemon.address;
  } else if (const std::string differs = stream_difference(*opened, shape_); !differs.empty()) {
    // Back at its address on other files, the daemon the stream's shape came from is
    // compared with what it served before.
    const std::string than =
        shape_from_ == m.daemon.address ? "it served when the stream opened" : "the one at " + shape_from_;
    return Status::FailedPrecondition(
        "the remote forkfeedd at " + m.daemon.address + " serves " + differs + " than " + than +
        ": every daemon of one Client must serve the same files (their names under "
        "the dataset's root, labels and sizes; at any path) under the same name");
  }
  m.link = std::move(link);
  m.heard = m.link->heard();
  m.heard_at = waiting_.now();
  m.generation = opened->generation;
  m.stats.up = true;
  plan_.up(i);
  return Status::Ok();
}

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
