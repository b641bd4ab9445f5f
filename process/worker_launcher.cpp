// The fork and spawn start methods.
#include "process/worker_launcher.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace forkfeed {
namespace {

class ForkLauncher final : public WorkerLauncher {
 public:
  StartMethod method() const override { return StartMethod::kFork; }
  Result<LaunchedWorker> launch(const PoolMemory& pool, const WorkerIdentity& who) override {
    const int keep[] = {who.socket};
    auto child = ChildProcess::fork([&pool, who] { return run_worker(pool, who); }, keep);
    if (!child.ok()) return child.status();
    return LaunchedWorker{std::move(child).value(), {}, {}};
  }
};

// A close-on-exec duplicate of `fd` above 9, so that no dup2 onto the spawned worker's
// fds 2 to 5 meets its own source (dup2 of an fd onto itself would keep its
// close-on-exec flag) or one overwritten by an earlier dup2.
UniqueFd duplicate_above_9(int fd) { return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 10)); }

// This process's stderr for a spawned worker, or /dev/null if it has none.
UniqueFd loader_stderr() {
  UniqueFd fd = duplicate_above_9(STDERR_FILENO);
  if (fd.valid()) return fd;
  const UniqueFd null(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  return null.valid() ? duplicate_above_9(null.get()) : UniqueFd();
}

Result<std::string> find_worker_executable() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("FORKFEED_WORKER"); env != nullptr && *env != '\0') {
    if (::access(env, X_OK) == 0) return std::string(env);
    return Status::NotFound(std::string("FORKFEED_WORKER=") + env + " is not an executable file");
  }
  std::vector<fs::path> candidates;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&make_spawn_launcher), &info) != 0 && info.dli_fname != nullptr) {
    // The name the dynamic linker used: through a run path like the Python extension's
    // $ORIGIN/../../.., so its ".." must be resolved before parent_path() means "up".
    std::error_code ec;
    fs::path lib = fs::canonical(info.dli_fname, ec);
    if (ec) lib = fs::absolute(info.dli_fname);
    const fs::path lib_dir = lib.parent_path();
    candidates.push_back(lib_dir.parent_path() / "bin" / "forkfeed-worker");
    candidates.push_back(lib_dir / "forkfeed-worker");
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path() / "forkfeed-worker");
  std::string looked;
  for (const fs::path& p : candidates) {
    if (::access(p.c_str(), X_OK) == 0) return p.string();
    looked += (looked.empty() ? "" : ", ") + p.string();
  }
  return Status::NotFound("cannot find the forkfeed-worker executable (looked at " + looked +
                          "); install it next to libforkfeed or set FORKFEED_WORKER to its path");
}

class SpawnLauncher final : public WorkerLauncher {
 public:
  StartMethod method() const override { return StartMethod::kSpawn; }

  Result<LaunchedWorker> launch(const PoolMemory& pool, const WorkerIdentity& who) override {
    if (path_.empty()) {
      auto found = find_worker_executable();
      if (!found.ok()) return found.status();
      path_ = std::move(found).value();
    }
    UniqueFd pool_fd = duplicate_above_9(pool.fd());
    UniqueFd socket_fd = duplicate_above_9(who.socket);
    UniqueFd stderr_fd = loader_stderr();
    if (!pool_fd.valid() || !socket_fd.valid() || !stderr_fd.valid()) {
      return Status::FromErrno("dup of the fds for a spawned worker", errno);
    }
    // Until it has started, the worker writes to a pipe: if it cannot start (a missing
    // library, a bad interpreter), what it said is there to name in the error.
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return Status::FromErrno("pipe for a spawned worker's stderr", errno);
    UniqueFd startup_stderr(ends[0]);
    const UniqueFd startup_write_end = duplicate_above_9(ends[1]);
    ::close(ends[1]);
    if (!startup_write_end.valid()) return Status::FromErrno("dup of a spawned worker's stderr pipe", errno);
    // Read only after the worker exited: it must never block this process.
    ::fcntl(startup_stderr.get(), F_SETFL, O_NONBLOCK);

    const std::vector<std::string> args = {
        path_, "--worker-id", std::to_string(who.id), "--incarnation", std::to_string(who.incarnation),
        "--parent-pid", std::to_string(who.parent), "--log-level", std::to_string(who.log_level),
        // PR_SET_PDEATHSIG follows the spawning thread: only right from the main one.
        "--die-with-parent", ::gettid() == ::getpid() ? "1" : "0"};
    const std::pair<int, int> fds[] = {{pool_fd.get(), kSpawnPoolFd},
                                       {socket_fd.get(), kSpawnSocketFd},
                                       {stderr_fd.get(), kSpawnStderrFd},
                                       {startup_write_end.get(), STDERR_FILENO}};
    auto child = ChildProcess::spawn(args, fds, kSpawnStderrFd + 1, "the worker executable");
    if (!child.ok()) return child.status();
    return LaunchedWorker{std::move(child).value(), path_, std::move(startup_stderr)};
  }

 private:
  std::string path_;
};

}  // namespace

std::unique_ptr<WorkerLauncher> make_fork_launcher() { return std::make_unique<ForkLauncher>(); }
std::unique_ptr<WorkerLauncher> make_spawn_launcher() { return std::make_unique<SpawnLauncher>(); }

}  // namespace forkfeed
