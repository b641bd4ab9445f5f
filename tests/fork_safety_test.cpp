// ForkSafety: the assessment reads this process as it is — libibverbs' fork mode, RDMA
// device files open or mapped under the device directory, libcuda if loaded, threads —
// and describes each hazard with its remedies. Whatever changes global state (the
// environment, the mark, threads, libraries) runs in a forked child.
//
// Over 300 lines on purpose: one case per hazard and per remedy; each changes global
// state in a forked child through the same helpers; splitting it would copy the
// fixture.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "forkfeed/fork_safety.h"
#include "process/process_view.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool has(const std::vector<ForkHazard>& hazards, ForkHazard h) {
  return std::find(hazards.begin(), hazards.end(), h) != hazards.end();
}

// libibverbs' own answers, from the copy forkfeed loaded (the test links only forkfeed).
struct Verbs {
  Verbs() {
    void* lib = ::dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) std::abort();
    is_fork_initialized =
        reinterpret_cast<decltype(is_fork_initialized)>(::dlsym(lib, "ibv_is_fork_initialized"));
    fork_init = reinterpret_cast<decltype(fork_init)>(::dlsym(lib, "ibv_fork_init"));
    get_device_list = reinterpret_cast<decltype(get_device_list)>(::dlsym(lib, "ibv_get_device_list"));
    free_device_list = reinterpret_cast<decltype(free_device_list)>(::dlsym(lib, "ibv_free_device_list"));
    if (!is_fork_initialized || !fork_init || !get_device_list || !free_device_list) std::abort();
  }
  ibv_fork_status (*is_fork_initialized)();
  int (*fork_init)();
  ibv_device** (*get_device_list)(int*);
  void (*free_device_list)(ibv_device**);
};

const Verbs& verbs() {
  static const Verbs v;
  return v;
}

RdmaForkMode ibv_mode() {
  switch (verbs().is_fork_initialized()) {
    case IBV_FORK_ENABLED: return RdmaForkMode::kEnabled;
    case IBV_FORK_UNNEEDED: return RdmaForkMode::kUnneeded;
    default: return RdmaForkMode::kDisabled;
  }
}

bool cuda_driver_loaded() {
  void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle != nullptr) ::dlclose(handle);
  return handle != nullptr;
}

int task_entries() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/task");
  while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

std::string resolved(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? buf : path;
}

// Failures found in a child, one per line; empty when all held.
class Failures {
 public:
  void expect(bool condition, const std::string& what) {
    if (!condition) text_ += what + "\n";
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Runs |body| in a forked child and returns the failures it found, or why the child
// died, so that what the body changes stays out of this process.
std::string in_child(const std::function<void(Failures&)>& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "pipe2 failed";
  const pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    Failures failures;
    body(failures);
    const std::string& text = failures.text();
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fds[1], text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    text += "the child died (status " + std::to_string(status) + ")\n";
  return text;
}

void clear_fork_env() {
  ::unsetenv("RDMAV_FORK_SAFE");
  ::unsetenv("IBV_FORK_SAFE");
}

TEST(ForkSafetyTest, ReadsThisProcess) {
  const ForkReport r = ForkSafety::assess();
  EXPECT_EQ(r.rdma_fork_mode, ibv_mode());
  EXPECT_TRUE(r.rdma_devices_open.empty()) << r.describe();
  EXPECT_EQ(r.cuda_loaded, cuda_driver_loaded());
  if (!r.cuda_loaded) {
    EXPECT_TRUE(r.cuda_active_devices.empty());
  }
  EXPECT_EQ(r.threads, task_entries());
  EXPECT_TRUE(r.unchecked.empty()) << r.describe();
}

TEST(ForkSafetyTest, FreshSingleThreadedProcessIsClean) {
  EXPECT_EQ("", in_child([](Failures& f) {
              clear_fork_env();
              const ForkReport r = ForkSafety::assess();
              f.expect(r.threads == 1, "threads: " + std::to_string(r.threads));
              f.expect(!r.rdma_fork_env, "rdma_fork_env without the variables");
              f.expect(!r.rdma_in_use(), "RDMA in use");
              f.expect(r.cuda_active_devices.empty(), "CUDA context active");
              f.expect(!r.hazardous(), "hazardous: " + r.summary());
              f.expect(r.summary() == "no fork hazard", "summary: " + r.summary());
              f.expect(contains(r.describe(), "no hazard"), "describe: " + r.describe());
              f.expect(!contains(r.describe(), "Remedies"), "describe: " + r.describe());
            }));
}

TEST(ForkSafetyTest, AnotherThreadIsAHazard) {
  EXPECT_EQ("", in_child([](Failures& f) {
              clear_fork_env();
              std::mutex mu;
              std::condition_variable cv;
              bool stop = false;
              std::thread other([&] {
                std::unique_lock lock(mu);
                cv.wait(lock, [&] { return stop; });
              });
              const ForkReport r = ForkSafety::assess();
              {
                std::lock_guard lock(mu);
                stop = true;
              }
              cv.notify_one();
              other.join();
              f.expect(r.threads == 2, "threads: " + std::to_string(r.threads));
              f.expect(r.hazardous(), "not hazardous with two threads");
              f.expect(r.hazards() == std::vector<ForkHazard>{ForkHazard::kThreads},
                       "hazards: " + r.summary());
              f.expect(r.summary() == "2 threads", "summary: " + r.summary());
              const std::string text = r.describe();
              f.expect(contains(text, "2 threads are running"), "describe: " + text);
              f.expect(contains(text, "deadlock"), "describe: " + text);
              f.expect(contains(text, "create the loader before"), "describe: " + text);
              f.expect(contains(text, "start_method=spawn"), "describe: " + text);
              f.expect(contains(text, "forkfeedd"), "describe: " + text);
              // An RDMA remedy does not help here.
              f.expect(!contains(text, "RDMAV_FORK_SAFE=1"), "describe: " + text);

              // The task entry of a joined thread may linger for a moment.
              int threads = 0;
              for (int i = 0; i < 200 && (threads = ForkSafety::assess().threads) != 1; ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
              }
              f.expect(threads == 1, "threads after join: " + std::to_string(threads));
            }));
}

// Opens, maps and keeps open the files of a fake device directory.
class DeviceDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devices_ = dir_.path() + "/infiniband";
    ASSERT_EQ(::mkdir(devices_.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir((devices_ + "/uverbs-sub").c_str(), 0700), 0);
    ASSERT_EQ(::mkdir((dir_.path() + "/other").c_str(), 0700), 0);
    for (const char* name : {"uverbs0", "rdma_cm", "uverbs1", "umad0", "issm0", "uverbs-sub/uverbs2"}) {
      make_file(devices_ + "/" + name);
    }
    make_file(dir_.path() + "/other/uverbs3");
  }
  void TearDown() override {
    for (const auto& [addr, size] : maps_) ::munmap(addr, size);
    for (int fd : fds_) ::close(fd);
  }

  static void make_file(const std::string& path) { std::ofstream(path) << std::string(4096, 'x'); }
  // Returns the fd, which stays open until the test ends.
  int open_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    EXPECT_GE(fd, 0) << path;
    fds_.push_back(fd);
    return fd;
  }
  // Maps the file and closes its fd: the mapping alone shows it.
  void map_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0) << path;
    void* addr = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    ASSERT_NE(addr, MAP_FAILED) << path;
    maps_.emplace_back(addr, 4096);
  }

  testing::TempDir dir_;
  std::string devices_;
  std::vector<int> fds_;
  std::vector<std::pair<void*, std::size_t>> maps_;
};

TEST_F(DeviceDirTest, FindsOpenAndMappedDeviceFilesOnly) {
  const int verbs_fd = open_file(devices_ + "/uverbs0");
  const int cm_fd = open_file(devices_ + "/rdma_cm");
  map_file(devices_ + "/uverbs1");
  map_file(devices_ + "/uverbs1");  // two mappings of one file: named once
  // Not RDMA devices, or not directly under the device directory.
  open_file(devices_ + "/umad0");
  map_file(devices_ + "/issm0");
  open_file(devices_ + "/uverbs-sub/uverbs2");
  map_file(devices_ + "/uverbs-sub/uverbs2");
  open_file(dir_.path() + "/other/uverbs3");
  map_file(dir_.path() + "/other/uverbs3");

  ProcessView view;
  view.device_dir = devices_;
  const ForkReport r = assess_fork_safety(view);
  const std::string real = resolved(devices_);
  const std::vector<std::string> expected = {
      "fd " + std::to_string(verbs_fd) + " -> " + real + "/uverbs0",
      "fd " + std::to_string(cm_fd) + " -> " + real + "/rdma_cm",
      "mapping " + real + "/uverbs1",
  };
  EXPECT_EQ(r.rdma_devices_open, expected);
  EXPECT_TRUE(r.rdma_in_use());
  EXPECT_TRUE(r.hazardous());

  const std::string text = r.describe();
  for (const std::string& device : expected) EXPECT_TRUE(contains(text, device)) << text;
  if (r.effective_rdma_fork_mode() == RdmaForkMode::kDisabled) {
    EXPECT_TRUE(has(r.hazards(), ForkHazard::kRdmaWithoutForkSupport)) << r.summary();
    EXPECT_TRUE(contains(text, "silent data corruption")) << text;
    EXPECT_TRUE(contains(text, "RDMAV_FORK_SAFE=1")) << text;
    EXPECT_TRUE(contains(r.summary(), "RDMA in use without fork support (fd ")) << r.summary();
  }
  EXPECT_TRUE(contains(text, "create the loader before RDMA or CUDA initialise")) << text;
  EXPECT_TRUE(contains(text, "start_method=spawn")) << text;
  EXPECT_TRUE(contains(text, "forkfeedd")) << text;
}

TEST_F(DeviceDirTest, FindsThemThroughASymlinkedDirectory) {
  const std::string link = dir_.path() + "/link";
  ASSERT_EQ(::symlink(devices_.c_str(), link.c_str()), 0);
  const int fd = open_file(link + "/uverbs0");
  map_file(link + "/rdma_cm");

  ProcessView view;
  view.device_dir = link + "/";
  const ForkReport r = assess_fork_safety(view);
  const std::string real = resolved(devices_);
  EXPECT_EQ(r.rdma_devices_open,
            (std::vector<std::string>{"fd " + std::to_string(fd) + " -> " + real + "/uverbs0",
                                      "mapping " + real + "/rdma_cm"}));
}

TEST_F(DeviceDirTest, NothingOpenNothingFound) {
  ProcessView view;
  view.device_dir = devices_;
  const ForkReport r = assess_fork_safety(view);
  EXPECT_TRUE(r.rdma_devices_open.empty());
  EXPECT_TRUE(contains(r.describe(), "no RDMA device open")) << r.describe();
}

// A /proc/self stand-in with the lines the kernel writes for a process using verbs.
TEST(ProcessViewTest, ParsesProcLikeTheKernelWritesIt) {
  testing::TempDir dir;
  const std::string proc = dir.path() + "/proc";
  for (const std::string sub : {"", "/fd", "/task", "/task/100", "/task/101", "/task/102"}) {
    ASSERT_EQ(::mkdir((proc + sub).c_str(), 0700), 0) << sub;
  }
  const std::vector<std::pair<std::string, std::string>> links = {
      {"0", "/dev/pts/0"},
      {"10", "/dev/infiniband/uverbs1"},
      {"3", "/dev/infiniband/uverbs0"},
      {"4", "/dev/infiniband/rdma_cm"},
      {"5", "/dev/infiniband/umad0"},
      {"6", "socket:[4242]"},
      {"7", "anon_inode:[infinibandevent]"},
  };
  for (const auto& [fd, target] : links) {
    ASSERT_EQ(::symlink(target.c_str(), (proc + "/fd/" + fd).c_str()), 0);
  }
  std::ofstream(proc + "/maps")
      << "55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]\n"
         "7f1c2a000000-7f1c2a001000 rw-s 00000000 00:05 1055                       /dev/infiniband/uverbs0\n"
         "7f1c2a001000-7f1c2a002000 rw-s 00001000 00:05 1055                       /dev/infiniband/uverbs0\n"
         "7f1c2a002000-7f1c2a003000 rw-p 00000000 00:00 0 \n"
         "7f1c2a003000-7f1c2a004000 r--s 00000000 08:01 777                        /home/a b/uverbs0\n"
         "7f1c2a004000-7f1c2a005000 rw-s 00000000 00:05 1056                       /dev/infiniband/uverbs1 "
         "(deleted)\n"
         "7f1c2a005000-7f1c2a006000 r-xp 00000000 08:01 778                        /usr/lib/libibverbs.so.1\n"
         "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

  ProcessView view;
  view.proc_self = proc;
  EXPECT_EQ(rdma_device_fds(view).value(),
            (std::vector<std::string>{"fd 3 -> /dev/infiniband/uverbs0", "fd 4 -> /dev/infiniband/rdma_cm",
                                      "fd 10 -> /dev/infiniband/uverbs1"}));
  EXPECT_EQ(rdma_device_mappings(view).value(),
            (std::vector<std::string>{"mapping /dev/infiniband/uverbs0",
                                      "mapping /dev/infiniband/uverbs1 (deleted)"}));
  EXPECT_EQ(thread_count(view).value(), 3);

  const ForkReport r = assess_fork_safety(view);
  EXPECT_EQ(r.rdma_devices_open.size(), 5u);
  EXPECT_EQ(r.threads, 3);
  EXPECT_TRUE(has(r.hazards(), ForkHazard::kThreads));
}

TEST(ProcessViewTest, WhatCannotBeReadIsSaidNotGuessed) {
  ProcessView view;
  view.proc_self = "/nonexistent/forkfeed/proc";
  const ForkReport r = assess_fork_safety(view);
  EXPECT_EQ(r.threads, 0);
  EXPECT_FALSE(has(r.hazards(), ForkHazard::kThreads));
  ASSERT_EQ(r.unchecked.size(), 3u) << r.describe();
  EXPECT_TRUE(contains(r.unchecked[0], "/nonexistent/forkfeed/proc/fd")) << r.unchecked[0];
  EXPECT_TRUE(contains(r.unchecked[1], "/nonexistent/forkfeed/proc/maps")) << r.unchecked[1];
  EXPECT_TRUE(contains(r.unchecked[2], "/nonexistent/forkfeed/proc/task")) << r.unchecked[2];
  EXPECT_TRUE(contains(r.describe(), "Not checked: threads: cannot open directory")) << r.describe();
  EXPECT_TRUE(contains(r.describe(), "thread count unknown")) << r.describe();
}

TEST(ForkSafetyTest, ForkSafeVariablesAsLibibverbsReadsThem) {
  EXPECT_EQ("", in_child([](Failures& f) {
              clear_fork_env();
              const RdmaForkMode now = ibv_mode();
              ::setenv("RDMAV_FORK_SAFE", "1", 1);
              ForkReport r = ForkSafety::assess();
              f.expect(r.rdma_fork_env, "RDMAV_FORK_SAFE=1 not seen");
              f.expect(r.rdma_fork_mode == now, "the variable alone changed what ibv says");
              f.expect(
                  r.effective_rdma_fork_mode() ==
                      (now == RdmaForkMode::kUnneeded ? RdmaForkMode::kUnneeded : RdmaForkMode::kEnabled),
                  "effective mode: " + std::string(to_string(r.effective_rdma_fork_mode())));
              if (now == RdmaForkMode::kDisabled) {
                f.expect(contains(r.describe(), "RDMA fork support enabled (RDMAV_FORK_SAFE"),
                         "describe: " + r.describe());
              }
              ::setenv("RDMAV_FORK_SAFE", "0", 1);
              f.expect(!ForkSafety::assess().rdma_fork_env, "RDMAV_FORK_SAFE=0 read as set");
              ::setenv("RDMAV_FORK_SAFE", "", 1);
              f.expect(ForkSafety::assess().rdma_fork_env, "RDMAV_FORK_SAFE= (empty) not read as set");
              ::unsetenv("RDMAV_FORK_SAFE");
              ::setenv("IBV_FORK_SAFE", "1", 1);
              f.expect(ForkSafety::assess().rdma_fork_env, "IBV_FORK_SAFE=1 not seen");

              // What effective_rdma_fork_mode() assumes: libibverbs enables fork support
              // for the variable as soon as it initialises.
              int devices = 0;
              if (ibv_device** list = verbs().get_device_list(&devices)) verbs().free_device_list(list);
              r = ForkSafety::assess();
              f.expect(r.rdma_fork_mode == r.effective_rdma_fork_mode(),
                       "after ibv_get_device_list: " + std::string(to_string(r.rdma_fork_mode)));
            }));
}

TEST(ForkSafetyTest, IbvForkInitEnablesForkSupport) {
  EXPECT_EQ("", in_child([](Failures& f) {
              clear_fork_env();
              const bool unneeded = verbs().is_fork_initialized() == IBV_FORK_UNNEEDED;
              f.expect(verbs().fork_init() == 0, "ibv_fork_init failed");
              const ForkReport r = ForkSafety::assess();
              f.expect(r.rdma_fork_mode == (unneeded ? RdmaForkMode::kUnneeded : RdmaForkMode::kEnabled),
                       "mode: " + std::string(to_string(r.rdma_fork_mode)));
              f.expect(r.rdma_fork_mode == ibv_mode(), "differs from ibv_is_fork_initialized()");
              f.expect(!r.rdma_fork_env, "rdma_fork_env without the variables");
            }));
}

TEST(ForkSafetyTest, MarkInitializedIsHonoured) {
  EXPECT_EQ("", in_child([](Failures& f) {
              clear_fork_env();
              f.expect(!ForkSafety::assess().rdma_marked, "marked before the call");
              rdma::mark_initialized();
              const ForkReport r = ForkSafety::assess();
              f.expect(r.rdma_marked, "mark_initialized() not seen");
              f.expect(r.rdma_in_use(), "RDMA not in use after mark_initialized()");
              if (r.rdma_fork_mode != RdmaForkMode::kUnneeded) {
                f.expect(r.hazardous(), "not hazardous after mark_initialized()");
                f.expect(contains(r.describe(), "mark_initialized() was called"),
                         "describe: " + r.describe());
              }
            }));
}

TEST(ForkSafetyTest, CudaDriverLoadedButNotInitialisedHoldsNoContext) {
  // The driver stub of a CUDA toolkit: SONAME libcuda.so.1, every call fails with
  // CUDA_ERROR_STUB_LIBRARY. Loading it must not make a context appear.
  std::string stub;
  for (const char* path : {"/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda/lib/stubs/libcuda.so",
                           "/usr/local/cuda-13.0/lib/stubs/libcuda.so",
                           "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so"}) {
    if (::access(path, R_OK) == 0) {
      stub = path;
      break;
    }
  }
  if (stub.empty() || cuda_driver_loaded()) GTEST_SKIP() << "no CUDA driver stub, or a real driver is loaded";
  EXPECT_EQ("", in_child([&](Failures& f) {
              f.expect(!ForkSafety::assess().cuda_loaded, "loaded before dlopen");
              void* handle = ::dlopen(stub.c_str(), RTLD_NOW);
              f.expect(handle != nullptr, "cannot load " + stub);
              const ForkReport r = ForkSafety::assess();
              f.expect(r.cuda_loaded, "the stub is not seen as libcuda.so.1");
              f.expect(r.cuda_active_devices.empty(), "a context on a stub");
              f.expect(!has(r.hazards(), ForkHazard::kCudaContext), "CUDA hazard: " + r.summary());
              f.expect(contains(r.describe(), "CUDA driver loaded, no active context"),
                       "describe: " + r.describe());
            }));
}

TEST(ForkSafetyTest, ADriverWithoutTheEntryPointsIsReported) {
  ProcessView view;
  view.cuda_driver = "libibverbs.so.1";  // loaded, but no CUDA driver
  const ForkReport r = assess_fork_safety(view);
  EXPECT_TRUE(r.cuda_loaded);
  EXPECT_TRUE(r.cuda_active_devices.empty());
  ASSERT_EQ(r.unchecked.size(), 1u) << r.describe();
  EXPECT_TRUE(contains(r.unchecked[0], "lacks cuDeviceGetCount")) << r.unchecked[0];

  view.cuda_driver = "libforkfeed-no-such-driver.so.1";
  EXPECT_FALSE(assess_fork_safety(view).cuda_loaded);
}

TEST(ForkReportTest, DescribesEachHazardWithItsConsequenceAndTheRemedies) {
  ForkReport r;
  r.rdma_fork_mode = RdmaForkMode::kDisabled;
  r.rdma_devices_open = {"fd 7 -> /dev/infiniband/uverbs0"};
  r.cuda_loaded = true;
  r.cuda_active_devices = {0, 3};
  r.threads = 5;
  EXPECT_EQ(r.hazards(), (std::vector<ForkHazard>{ForkHazard::kRdmaWithoutForkSupport,
                                                  ForkHazard::kCudaContext, ForkHazard::kThreads}));
  EXPECT_EQ(
      r.summary(),
      "RDMA in use without fork support (fd 7 -> /dev/infiniband/uverbs0); CUDA context active on devices 0, "
      "3; 5 threads");
  const std::string text = r.describe();
  for (const char* part :
       {"3 hazards", "fd 7 -> /dev/infiniband/uverbs0", "fork support is disabled", "silent data corruption",
        "CUDA context is active on devices 0, 3", "cannot use CUDA", "5 threads are running", "deadlock",
        "Remedies", "create the loader before RDMA or CUDA initialise", "RDMAV_FORK_SAFE=1",
        "start_method=spawn", "forkfeedd"}) {
    EXPECT_TRUE(contains(text, part)) << part << " missing from:\n" << text;
  }
  EXPECT_FALSE(contains(text, "no hazard")) << text;
}

TEST(ForkReportTest, RdmaWithForkSupportIsAHazardOfItsOwn) {
  ForkReport r;
  r.rdma_fork_mode = RdmaForkMode::kEnabled;
  r.rdma_marked = true;
  r.threads = 1;
  EXPECT_EQ(r.hazards(), std::vector<ForkHazard>{ForkHazard::kRdmaForkSupport});
  const std::string text = r.describe();
  EXPECT_TRUE(contains(text, "SIGSEGV")) << text;
  EXPECT_TRUE(contains(text, "forkfeed::rdma::mark_initialized() was called")) << text;
  EXPECT_FALSE(contains(text, "RDMAV_FORK_SAFE=1")) << text;  // already on; no help

  r.rdma_fork_mode = RdmaForkMode::kDisabled;
  r.rdma_fork_env = true;  // libibverbs turns it on when it initialises
  EXPECT_EQ(r.effective_rdma_fork_mode(), RdmaForkMode::kEnabled);
  EXPECT_EQ(r.hazards(), std::vector<ForkHazard>{ForkHazard::kRdmaForkSupport});
}

TEST(ForkReportTest, RdmaIsSafeWhereTheKernelCopiesPinnedPages) {
  ForkReport r;
  r.rdma_fork_mode = RdmaForkMode::kUnneeded;
  r.rdma_devices_open = {"mapping /dev/infiniband/uverbs0"};
  r.threads = 1;
  EXPECT_TRUE(r.rdma_in_use());
  EXPECT_FALSE(r.hazardous());
  const std::string text = r.describe();
  EXPECT_TRUE(contains(text, "no hazard")) << text;
  EXPECT_TRUE(contains(text, "unneeded (the kernel copies pinned pages on fork)")) << text;
  EXPECT_TRUE(contains(text, "mapping /dev/infiniband/uverbs0")) << text;
}

}  // namespace
}  // namespace forkfeed
