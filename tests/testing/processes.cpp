// Process, fd and delivery helpers for the loader tests.
#include "tests/testing/processes.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace forkfeed::testing {
namespace {

// pid, state and ppid from /proc/<pid>/stat; comm may hold spaces, so parse after the last ')'.
bool read_stat(const std::string& pid, char& state, pid_t& ppid) {
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 > line.size()) return false;
  std::istringstream rest(line.substr(close + 2));
  return static_cast<bool>(rest >> state >> ppid);
}

char hang_message[512];

void on_alarm(int) {
  (void)!::write(STDERR_FILENO, hang_message, std::strlen(hang_message));
  ::_exit(124);
}

}  // namespace

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    char state = 0;
    pid_t ppid = 0;
    if (read_stat(e->d_name, state, ppid) && ppid == parent) out.push_back(pid);
  }
  ::closedir(proc);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<pid_t> live_children() {
  std::vector<pid_t> out = children_of(::getpid());
  std::erase_if(out, [](pid_t pid) { return !alive(pid); });
  return out;
}

char process_state(pid_t pid) {
  char state = 0;
  pid_t ppid = 0;
  return read_stat(std::to_string(pid), state, ppid) ? state : 0;
}

bool alive(pid_t pid) {
  const char state = process_state(pid);
  return state != 0 && state != 'Z' && state != 'X';
}

StoppedProcess::StoppedProcess(pid_t pid) : pid_(pid) {
  EXPECT_EQ(::kill(pid_, SIGSTOP), 0) << "SIGSTOP of " << pid_ << ": " << std::strerror(errno);
  // Stopped once the kernel says so, not when the signal is sent.
  EXPECT_TRUE(eventually([&] { return process_state(pid_) == 'T'; }, std::chrono::seconds(5)))
      << "process " << pid_ << " did not stop";
}

void StoppedProcess::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
  pid_ = -1;
}

int open_fds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (::readdir(d) != nullptr) ++n;
  ::closedir(d);
  return n;
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

HangGuard::HangGuard(unsigned seconds, const std::string& what) {
  std::snprintf(hang_message, sizeof hang_message, "\nHANG: %s did not finish within %u s; giving up\n",
                what.c_str(), seconds);
  struct sigaction action {};
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGALRM, &action, nullptr);
  ::alarm(seconds);
}

HangGuard::~HangGuard() {
  ::alarm(0);
  ::signal(SIGALRM, SIG_DFL);
}

BatchRecord::BatchRecord(const Batch& batch)
    : epoch(batch.epoch()),
      position(batch.index()),
      indices(batch.sample_indices().begin(), batch.sample_indices().end()),
      labels(batch.labels().begin(), batch.labels().end()) {
  const auto* p = static_cast<const std::uint8_t*>(batch.data());
  pixels.assign(p, p + batch.bytes());
}

Batches read_pass_with(const NextBatch& next_batch, std::size_t max_batches) {
  Batches run;
  for (std::size_t i = 0; i <= max_batches; ++i) {
    auto next = next_batch();
    if (!next.ok()) {
      ADD_FAILURE() << "next() failed after " << run.size()
                    << " batches of the pass: " << next.status().message();
      return run;
    }
    if (!next->has_value()) return run;
    run.emplace_back(**next);
  }
  ADD_FAILURE() << "the pass did not end within " << max_batches << " batches";
  return run;
}

Batches read_batches_with(const NextBatch& next_batch, std::size_t count) {
  Batches run;
  // At most one end of pass (nullopt) per batch, plus one.
  for (std::size_t calls = 0; run.size() < count && calls <= 2 * count + 1; ++calls) {
    auto next = next_batch();
    if (!next.ok()) {
      ADD_FAILURE() << "next() failed after " << run.size() << " of " << count
                    << " batches: " << next.status().message();
      return run;
    }
    if (next->has_value()) run.emplace_back(**next);
  }
  EXPECT_EQ(run.size(), count) << "too many ends of pass";
  return run;
}

Batches read_pass(Loader& loader, std::size_t max_batches) {
  return read_pass_with([&] { return loader.next(); }, max_batches);
}

Batches read_batches(Loader& loader, std::size_t count) {
  return read_batches_with([&] { return loader.next(); }, count);
}

std::vector<std::uint64_t> indices_of(const Batches& batches) {
  std::vector<std::uint64_t> out;
  for (const BatchRecord& b : batches) out.insert(out.end(), b.indices.begin(), b.indices.end());
  return out;
}

std::string exactly_once(const std::vector<std::uint64_t>& indices, std::uint64_t n) {
  std::vector<int> seen(n, 0);
  std::string problems;
  for (std::uint64_t i : indices) {
    if (i >= n) {
      problems += " index " + std::to_string(i) + " out of range;";
      continue;
    }
    if (++seen[i] == 2) problems += " sample " + std::to_string(i) + " repeated;";
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    if (seen[i] == 0) problems += " sample " + std::to_string(i) + " missing;";
  }
  return problems;
}

std::string first_difference(const Batches& got, const Batches& expected) {
  for (std::size_t b = 0; b < std::min(got.size(), expected.size()); ++b) {
    const BatchRecord &g = got[b], &e = expected[b];
    const std::string where = "batch " + std::to_string(b) + ": ";
    if (g.epoch != e.epoch)
      return where + "epoch " + std::to_string(g.epoch) + ", expected " + std::to_string(e.epoch);
    if (g.position != e.position) {
      return where + "position " + std::to_string(g.position) + ", expected " + std::to_string(e.position);
    }
    if (g.indices != e.indices) {
      std::string s = where + "sample indices differ: got";
      for (auto i : g.indices) s.append(1, ' ').append(std::to_string(i));
      s += ", expected";
      for (auto i : e.indices) s.append(1, ' ').append(std::to_string(i));
      return s;
    }
    if (g.labels != e.labels) return where + "labels differ";
    if (g.pixels != e.pixels) return where + "pixel bytes differ";
  }
  if (got.size() != expected.size()) {
    return std::to_string(got.size()) + " batches, expected " + std::to_string(expected.size());
  }
  return "";
}

NoFreeFds::NoFreeFds() {
  rlimit limit{};
  EXPECT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  soft_ = limit.rlim_cur;
  const int lowest_free = ::dup(0);  // the number the next open() would get
  EXPECT_GE(lowest_free, 0);
  ::close(lowest_free);
  limit.rlim_cur = static_cast<rlim_t>(lowest_free);
  EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
}

NoFreeFds::~NoFreeFds() {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = static_cast<rlim_t>(soft_);
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace forkfeed::testing
