// Files a user names (a manifest, a --resume or --save-state file, a daemon config) may
// be anything: a FIFO, a device, a directory, a symbolic link. The tools refuse what is
// not a regular file at once, naming what it is, instead of blocking in open(), reading
// without end or replacing a device; and an image file over --max-file-bytes is bad data.
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "forkfeed/client.h"
#include "tests/testing/command.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/processes.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Outcome = testing::CommandOutcome;

// Refusals take milliseconds; the deadline only keeps a regression (a blocked open(), a
// read without end) from hanging or exhausting the machine.
constexpr auto kPrompt = std::chrono::seconds(30);

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

mode_t file_type(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

class UserFilesTest : public testing::DaemonSuite<UserFilesTest> {
 protected:
  static void SetUpTestSuite() { make_dataset(8, 2, 3, 24, 40); }

  Outcome bench(std::vector<std::string> args, std::chrono::seconds timeout = kPrompt) {
    args.insert(args.begin(), std::string(FORKFEED_BIN_DIR) + "/forkfeed-bench");
    for (const char* a :
         {"--epochs", "1", "--batch", "4", "--size", "16", "--workers", "1", "--log-level", "warn"})
      args.emplace_back(a);
    return testing::run_command(args, out_.path(), timeout);
  }
  Outcome forkfeedd(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {std::string(FORKFEED_BIN_DIR) + "/forkfeedd", "--socket",
                                     out_.path() + "/d.sock", "--log-level", "warn"};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::run_command(argv, out_.path(), kPrompt);
  }
  std::string fifo(const std::string& name) {
    const std::string path = out_.path() + "/" + name;
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path << ": " << std::strerror(errno);
    return path;
  }
  // A one-line error, exit 1 or 2, naming `path` and `what` it is.
  static void expect_refused(const Outcome& o, const std::string& tool, const std::string& path,
                             const std::string& what) {
    ASSERT_TRUE(o.exited) << o.describe();
    EXPECT_NE(o.code, 0) << o.describe();
    EXPECT_EQ(o.err.rfind(tool + ": ", 0), 0u) << o.describe();
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.describe();
    EXPECT_NE(o.err.find(path), std::string::npos) << o.describe();
    EXPECT_NE(o.err.find(what), std::string::npos) << o.describe();
  }

  testing::TempDir out_;  // per test: special files and captured output
};

// --save-state onto a FIFO, a symbolic link or a character device: refused before the
// run, and the target is left as it was (rename() would have replaced it).
TEST_F(UserFilesTest, SaveStateRefusesTargetsThatAreNotRegularFiles) {
  const std::string pipe = fifo("state.fifo");
  const std::string real = out_.path() + "/real.json", link = out_.path() + "/state.link";
  std::ofstream(real) << "keep\n";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0) << std::strerror(errno);
  std::vector<std::pair<std::string, std::string>> targets = {{pipe, "is a FIFO"},
                                                              {link, "is a symbolic link"}};
  // A char device of our own (1,3 is what /dev/null is): the real one must never be at risk.
  const std::string device = out_.path() + "/null";
  if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    targets.emplace_back(device, "is a character device");
  } else {
    std::cerr << "mknod: " << std::strerror(errno) << "; the device case is not run\n";
  }
  for (const auto& [path, what] : targets) {
    SCOPED_TRACE(path);
    const mode_t type = file_type(path);
    expect_refused(bench({"--data", root_, "--save-state", path}), "forkfeed-bench", path, what);
    EXPECT_EQ(file_type(path), type) << "the target was replaced";
    EXPECT_FALSE(fs::exists(path + ".tmp"));
  }
  EXPECT_EQ(read_file(real), "keep\n") << "the link's target was written";
}

// A regular file is replaced as before (the refusal above is not a refusal of everything).
TEST_F(UserFilesTest, SaveStateStillReplacesARegularFile) {
  const std::string state = out_.path() + "/state.json";
  std::ofstream(state) << "old\n";
  const Outcome o = bench({"--data", root_, "--save-state", state});
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  EXPECT_NE(read_file(state), "old\n");
  EXPECT_EQ(file_type(state), S_IFREG);
}

TEST_F(UserFilesTest, ManifestThatIsAFifoIsRefusedPromptly) {
  const std::string pipe = fifo("train.tsv");
  expect_refused(bench({"--manifest", pipe}), "forkfeed-bench", pipe, "is a FIFO");
}

// Before, this read /dev/zero into memory without end. The deadline is short so that a
// regression fails before it takes much of the machine's memory.
TEST_F(UserFilesTest, DevZeroAsManifestIsRefusedPromptly) {
  expect_refused(bench({"--manifest", "/dev/zero"}, std::chrono::seconds(10)), "forkfeed-bench", "/dev/zero",
                 "is a character device");
}

TEST_F(UserFilesTest, ResumeFromAFifoIsRefusedPromptly) {
  const std::string pipe = fifo("state.json");
  expect_refused(bench({"--data", root_, "--resume", pipe}), "forkfeed-bench", pipe, "is a FIFO");
}

TEST_F(UserFilesTest, MaxFileBytesFlagRefusesLargerImages) {
  const Outcome help = testing::run_command({std::string(FORKFEED_BIN_DIR) + "/forkfeed-bench", "--help"},
                                            out_.path(), kPrompt);
  EXPECT_NE(help.out.find("--max-file-bytes"), std::string::npos) << help.describe();
  // Every image of the dataset is larger than 100 bytes.
  const Outcome o = bench({"--data", root_, "--max-file-bytes", "100", "--on-error", "fail"});
  ASSERT_TRUE(o.exited) << o.describe();
  EXPECT_EQ(o.code, 1) << o.describe();
  EXPECT_NE(o.err.find("max_file_bytes 100"), std::string::npos) << o.describe();
  EXPECT_NE(o.err.find(root_), std::string::npos) << "the file is not named: " << o.describe();
}

TEST_F(UserFilesTest, DaemonConfigThatIsADirectoryIsAnError) {
  expect_refused(forkfeedd({"--config", out_.path()}), "forkfeedd", out_.path(), "is a directory");
}

TEST_F(UserFilesTest, DaemonConfigThatIsAFifoIsAnError) {
  const std::string pipe = fifo("forkfeedd.yaml");
  expect_refused(forkfeedd({"--config", pipe}), "forkfeedd", pipe, "is a FIFO");
}

// A stream whose manifest is a FIFO is an error reply; the daemon goes on serving and
// still stops at SIGTERM (a stream thread blocked in open() used to hold it up).
TEST_F(UserFilesTest, DaemonRefusesAFifoManifestAndStaysResponsive) {
  testing::HangGuard guard(150, "UserFilesTest.DaemonFifoManifest");
  const std::string pipe = fifo("train.tsv");
  testing::DaemonProcess daemon(socket_path("fifo"));
  LoaderOptions o = stream_options(1, 4);
  o.image_folder.clear();
  o.manifest = pipe;
  auto refused = std::async(std::launch::async, [&] { return Client::connect(daemon.socket(), o); });
  if (refused.wait_for(kPrompt) != std::future_status::ready) {
    ::kill(daemon.pid(), SIGKILL);  // so that the client's wait ends
    FAIL() << "the stream did not answer within " << kPrompt.count() << " s";
  }
  {
    const auto client = refused.get();
    ASSERT_FALSE(client.ok());
    EXPECT_NE(client.status().message().find(pipe), std::string::npos) << client.status().message();
    EXPECT_NE(client.status().message().find("is a FIFO"), std::string::npos) << client.status().message();

    auto good = Client::connect(daemon.socket(), stream_options(1, 4));
    ASSERT_TRUE(good.ok()) << good.status().message();
    EXPECT_FALSE(testing::read_pass(**good).empty());
  }
  const auto status = daemon.signal_and_wait(SIGTERM, kPrompt);
  ASSERT_TRUE(status.has_value()) << "forkfeedd did not stop at SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
}

}  // namespace
}  // namespace forkfeed
