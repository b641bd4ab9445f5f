// ProgressLine: throttled redraw of one terminal line with "\r" and clear-to-end.
#include "tools/bench/progress_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

namespace forkfeed::bench {
namespace {

constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
// "recent" images/s is measured over about this long.
constexpr auto kRecentWindow = std::chrono::seconds(3);

double seconds(ProgressLine::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string format_duration(double s) {
  const auto total = static_cast<std::uint64_t>(s + 0.5);
  char buf[32];
  if (total >= 3600) {
    std::snprintf(buf, sizeof buf, "%llu:%02llu:%02llu", static_cast<unsigned long long>(total / 3600),
                  static_cast<unsigned long long>(total / 60 % 60),
                  static_cast<unsigned long long>(total % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llu:%02llu", static_cast<unsigned long long>(total / 60),
                  static_cast<unsigned long long>(total % 60));
  }
  return buf;
}

// Columns of the terminal on stdout; a long line would wrap and "\r" could not redraw it.
std::size_t terminal_columns() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

}  // namespace

ProgressLine::ProgressLine(std::uint64_t epochs, std::uint64_t batches_per_epoch, bool enabled)
    : epochs_(epochs),
      batches_per_epoch_(batches_per_epoch),
      enabled_(enabled && isatty(STDOUT_FILENO) == 1),
      start_(Clock::now()) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(std::uint64_t epoch, std::uint64_t batch, std::uint64_t images) {
  if (!enabled_) return;
  if (first_update_) {
    done_before_ = epoch * batches_per_epoch_ + batch;
    first_update_ = false;
  }
  const auto now = Clock::now();
  if (shown_ && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;

  std::string line = render(now, epoch, batch, images);
  const std::size_t columns = terminal_columns();
  if (line.size() >= columns) line.resize(columns - 1);
  std::fputs(("\r" + line + "\x1b[K").c_str(), stdout);
  std::fflush(stdout);
  shown_ = true;

  recent_.push_back({now, images});
  while (recent_.size() > 2 && now - recent_[1].time > kRecentWindow) recent_.pop_front();
}

void ProgressLine::finish() {
  if (!shown_) return;
  std::fputs("\r\x1b[K", stdout);
  std::fflush(stdout);
  shown_ = false;
}

std::string ProgressLine::render(Clock::time_point now, std::uint64_t epoch, std::uint64_t batch,
                                 std::uint64_t images) const {
  const double elapsed = seconds(now - start_);
  const double overall = elapsed > 0 ? static_cast<double>(images) / elapsed : 0.0;
  double recent = overall;
  if (!recent_.empty() && now > recent_.front().time) {
    recent = static_cast<double>(images - recent_.front().images) / seconds(now - recent_.front().time);
  }

  // ETA from the batches this run did: it holds whatever the last batch's size, and a
  // resumed run does not count the batches done before it.
  const std::uint64_t total = epochs_ * batches_per_epoch_;
  const std::uint64_t done = epoch * batches_per_epoch_ + batch + 1;
  std::string eta = "--:--";
  if (done > done_before_ && done <= total) {
    eta = format_duration(elapsed * static_cast<double>(total - done) /
                          static_cast<double>(done - done_before_));
  }

  char buf[256];
  std::snprintf(buf, sizeof buf, "%.1f img/s (recent %.1f) | epoch %llu/%llu | batch %llu/%llu | ETA %s",
                overall, recent, static_cast<unsigned long long>(epoch + 1),
                static_cast<unsigned long long>(epochs_), static_cast<unsigned long long>(batch + 1),
                static_cast<unsigned long long>(batches_per_epoch_), eta.c_str());
  return buf;
}

}  // namespace forkfeed::bench
