// The command lines of forkfeed-mkdata, forkfeed-shard, forkfeedd, forkfeed-ctl,
// forkfeed-worker and forkfeed-gateway: bad arguments exit 2, as each --help says, integer
// flags refuse what does not fit or is not decimal, and forkfeed-worker run by hand says
// why it cannot work. (forkfeed-bench: bench_cli_test.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/testing/command.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

testing::CommandOutcome run_tool(const std::string& tool, const std::vector<std::string>& args,
                                 const std::string& dir) {
  std::vector<std::string> argv = {std::string(FORKFEED_BIN_DIR) + "/" + tool};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::run_command(argv, dir, std::chrono::seconds(60));
}

std::string joined(const std::vector<std::string>& args) {
  std::string text;
  for (const std::string& a : args) text += a + " ";
  return text;
}

TEST(ToolArguments, EveryHelpDocumentsExitStatusTwoForBadArguments) {
  testing::TempDir dir;
  for (const char* tool : {"forkfeed-mkdata", "forkfeed-shard", "forkfeedd", "forkfeed-ctl",
                           "forkfeed-worker", "forkfeed-gateway"}) {
    const testing::CommandOutcome o = run_tool(tool, {"--help"}, dir.path());
    EXPECT_TRUE(o.exited && o.code == 0) << tool << ": " << o.describe();
    EXPECT_NE(o.out.find("2 bad arguments"), std::string::npos) << tool << ": " << o.describe();
  }
}

TEST(ToolArguments, MkdataRefusesOverflowAndBadArguments) {
  testing::TempDir dir;
  const std::string out = dir.path() + "/data";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--out", out, "--images", "2", "--classes", "1", "--seed",
                                 "18446744073709551616"},
        {"--out", out, "--images", "4294967296"},
        {"--out", out, "--images", "-1"},
        {"--out", out, "--classes", "two"},
        {"--images", "2"},
        {"--out", out, "--bogus"}}) {
    const testing::CommandOutcome o = run_tool("forkfeed-mkdata", args, dir.path());
    EXPECT_TRUE(o.exited && o.code == 2) << joined(args) << ": " << o.describe();
    EXPECT_FALSE(o.err.empty()) << joined(args);
  }
}

TEST(ToolArguments, DaemonRefusesOverflowAndBadArgumentsWithoutServing) {
  testing::TempDir dir;
  const std::string socket = dir.path() + "/d.sock";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--socket", socket, "--max-streams", "4294967296"},
        {"--socket", socket, "--max-workers", "-1"},
        {"--socket", socket, "--allow-uid", "99999999999"},
        {"--socket", socket, "--max-arena-bytes", "lots"},
        {"--socket", socket, "--log-level", "chatty"},
        {"--socket", socket, "--bogus"}}) {
    const testing::CommandOutcome o = run_tool("forkfeedd", args, dir.path());
    EXPECT_TRUE(o.exited && o.code == 2) << joined(args) << ": " << o.describe();
    EXPECT_FALSE(o.err.empty()) << joined(args);
  }
}

TEST(ToolArguments, CtlBadArgumentsExitTwo) {
  testing::TempDir dir;
  for (const std::vector<std::string>& args : {std::vector<std::string>{},
                                               {"bogus"},
                                               {"stats", "--bogus"},
                                               {"--timeout", "nan", "stats"},
                                               {"--timeout", "inf", "stats"},
                                               {"--timeout", "0", "stats"},
                                               {"--timeout", "86401", "stats"},
                                               {"--timeout", "1e400", "stats"},
                                               {"--timeout", "0.5x", "stats"}}) {
    const testing::CommandOutcome o = run_tool("forkfeed-ctl", args, dir.path());
    EXPECT_TRUE(o.exited && o.code == 2) << joined(args) << ": " << o.describe();
  }
}

// forkfeedd spawns forkfeed-gateway, but its integer flags are read as every tool's are:
// decimal and whole (CLI11 alone read "0x10" as 16 and "010" as 8).
TEST(ToolArguments, GatewayIntegerFlagsAreWholeDecimalNumbers) {
  testing::TempDir dir;
  const std::vector<std::string> required = {"--daemon-socket", dir.path() + "/d.sock",
                                             "--listen",        "127.0.0.1:0",
                                             "--token-file",    dir.path() + "/token"};
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"--parent-pid", "0x10"},
                                                {"--parent-pid", "12x"},
                                                {"--parent-pid", "1", "--ready-fd", "3.5"},
                                                {"--parent-pid", "1", "--ready-fd", "0x3"}}) {
    std::vector<std::string> args = required;
    args.insert(args.end(), flags.begin(), flags.end());
    const testing::CommandOutcome o = run_tool("forkfeed-gateway", args, dir.path());
    EXPECT_TRUE(o.exited && o.code == 2) << joined(args) << ": " << o.describe();
    EXPECT_NE(o.err.find("must be an integer"), std::string::npos) << joined(args) << ": " << o.describe();
  }
}

TEST(ToolArguments, WorkerRunByHandNamesTheMissingFd) {
  testing::TempDir dir;
  const std::string parent = std::to_string(::getpid());  // run_command spawns it from here
  const testing::CommandOutcome o =
      run_tool("forkfeed-worker",
               {"--worker-id", "0", "--incarnation", "1", "--parent-pid", parent, "--die-with-parent", "0"},
               dir.path());
  EXPECT_TRUE(o.exited && o.code == 2) << o.describe();
  EXPECT_NE(o.err.find("forkfeed-worker: fd "), std::string::npos) << o.describe();
  EXPECT_NE(o.err.find("not by hand"), std::string::npos) << o.describe();

  const testing::CommandOutcome bad =
      run_tool("forkfeed-worker", {"--worker-id", "-1", "--parent-pid", parent}, dir.path());
  EXPECT_TRUE(bad.exited && bad.code == 2) << bad.describe();
}

}  // namespace
}  // namespace forkfeed
