// Work spread over a few threads of this process, all joined before it returns: a loader
// forks its workers later, and no thread of ours may be running then.
#pragma once

#include <algorithm>
#include <cstddef>
#include <system_error>
#include <thread>
#include <vector>

namespace forkfeed {

// Runs `work` on min(`most`, the CPU count) threads, this one among them, and returns
// when every one has returned. `work` takes its share itself (a shared counter) and must
// let nothing escape. Out of threads, those started and this one do it all.
template <typename Work>
void on_threads(std::size_t most, Work&& work) {
  const std::size_t threads = std::min<std::size_t>(most, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::jthread> pool;
  try {
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  } catch (const std::system_error&) {
    // Out of threads: the ones started, and this one, do it all.
  }
  work();
}

}  // namespace forkfeed
