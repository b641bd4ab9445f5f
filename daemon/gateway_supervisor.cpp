// GatewaySupervisor: a dead gateway noticed, started again with a back-off, and shown.
#include "daemon/gateway_supervisor.h"

#include <poll.h>
#include <spdlog/spdlog.h>

namespace forkfeed {
namespace {

double seconds(GatewaySupervisor::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string joined(const std::vector<std::string>& addresses) {
  std::string out;
  for (const std::string& a : addresses) out += (out.empty() ? "" : ", ") + a;
  return out;
}

}  // namespace

Result<std::unique_ptr<GatewaySupervisor>> GatewaySupervisor::start(const DaemonConfig& config,
                                                                    const std::string& socket) {
  auto first = GatewayProcess::start(config, socket);
  if (!first.ok()) return first.status();
  return std::unique_ptr<GatewaySupervisor>(new GatewaySupervisor(config, socket, std::move(first).value()));
}

GatewaySupervisor::GatewaySupervisor(const DaemonConfig& config, std::string socket, GatewayProcess first)
    : config_(config), socket_(std::move(socket)), started_(Clock::now()) {
  // Later gateways listen where this one does: its clients reconnect where they were.
  config_.listen = first.listening();
  listening_ = first.listening();
  pid_ = first.pid();
  gateway_.emplace(std::move(first));
}

void GatewaySupervisor::tick(Clock::time_point now) {
  if (stopped_) return;
  if (gateway_) {
    pollfd p{gateway_->pidfd(), POLLIN, 0};
    if (::poll(&p, 1, 0) == 1) noticed_death(now);
    return;
  }
  std::unique_lock lock(mu_);
  const bool due = now >= next_try_;
  lock.unlock();
  if (due) try_start();
}

void GatewaySupervisor::noticed_death(Clock::time_point now) {
  auto exit = gateway_->child().poll();
  const pid_t pid = gateway_->pid();
  gateway_.reset();
  // One that served a while is replaced at once; one that dies soon after its start is
  // slowed down as a failed start is, so that a crash loop costs little.
  Clock::duration wait = Clock::duration::zero();
  if (now - started_ >= kSettled) {
    backoff_.reset();
  } else {
    wait = backoff_.failed();
  }
  spdlog::error("forkfeed-gateway (pid {}) {}; its remote streams are closed; starting another{}", pid,
                exit ? exit->describe() : std::string("ended"),
                wait > Clock::duration::zero() ? fmt::format(" in {:.1f} s", seconds(wait)) : std::string());
  std::lock_guard lock(mu_);
  listening_.clear();
  pid_ = -1;
  next_try_ = now + wait;
  last_error_ = "forkfeed-gateway (pid " + std::to_string(pid) + ") " +
                (exit ? exit->describe() : std::string("ended"));
}

void GatewaySupervisor::try_start() {
  auto gateway = GatewayProcess::start(config_, socket_);
  const Clock::time_point after = Clock::now();
  if (!gateway.ok()) {
    const Clock::duration wait = backoff_.failed();
    std::lock_guard lock(mu_);
    failed_starts_ += 1;
    failures_in_a_row_ += 1;
    last_error_ = gateway.status().message();
    next_try_ = after + wait;
    spdlog::error(
        "{} (try {} in a row); trying again in {:.1f} s (remote clients are not served meanwhile; "
        "forkfeed-ctl stats shows the gateway's state)",
        last_error_, failures_in_a_row_, seconds(wait));
    return;
  }
  started_ = after;
  gateway_.emplace(std::move(gateway).value());
  std::lock_guard lock(mu_);
  restarts_ += 1;
  if (failures_in_a_row_ > 0) {
    spdlog::warn(
        "forkfeed-gateway started again (pid {}) after {} failed tries; remote clients are served at {}",
        gateway_->pid(), failures_in_a_row_, joined(gateway_->listening()));
  } else {
    spdlog::info("forkfeed-gateway started again (pid {}) at {}", gateway_->pid(),
                 joined(gateway_->listening()));
  }
  failures_in_a_row_ = 0;
  listening_ = gateway_->listening();
  pid_ = gateway_->pid();
}

void GatewaySupervisor::stop() {
  if (gateway_) gateway_->stop();
  gateway_.reset();
  std::lock_guard lock(mu_);
  stopped_ = true;
  listening_.clear();
  pid_ = -1;
}

std::vector<std::string> GatewaySupervisor::listening() const {
  std::lock_guard lock(mu_);
  return listening_;
}

nlohmann::json GatewaySupervisor::stats(Clock::time_point now) const {
  std::lock_guard lock(mu_);
  nlohmann::json s = {{"state", pid_ > 0 ? "serving" : (stopped_ ? "stopped" : "starting again")},
                      {"pid", pid_ > 0 ? nlohmann::json(pid_) : nlohmann::json(nullptr)},
                      {"restarts", restarts_},
                      {"failed_starts", failed_starts_},
                      {"failures_in_a_row", failures_in_a_row_},
                      {"last_error", last_error_}};
  if (pid_ <= 0 && !stopped_) s["next_try_in_s"] = std::max(0.0, seconds(next_try_ - now));
  return s;
}

}  // namespace forkfeed
