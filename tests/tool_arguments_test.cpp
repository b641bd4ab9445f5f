// The command lines of forkfeed-mkdata, forkfeed-shard, forkfeedd, forkfeed-ctl and
// forkfeed-worker: bad arguments exit 2, as each --help says, integer flags refuse what
// does not fit, and forkfeed-worker run by hand says why it cannot work. (forkfeed-bench: bench_cli_test.)
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
  for (const char* tool :
       {"forkfeed-mkdata", "forkfeed-shard", "forkfeedd", "forkfeed-ctl", "forkfeed-worker"}) {
    const testing::CommandOutcome o = run_tool(tool, {"--help"}, dir.path());
    EXPECT_TRUE(o.exited && o.code == 0) << tool << ": " << o.describe();
    EXPECT_NE(o.out.find("2 bad arguments"), std::string::npos) << tool << ": " << o.describe();
  }
}

TEST(ToolArguments, MkdataRefusesOverflowAndBadArguments) {
  testing::TempDir dir;
  const std::string out = dir.path() + "/data";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--out", out, "--images", "2", "--classes", "1", "--seed", "18446744073709551616"},
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
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, {"bogus"}, {"stats", "--bogus"}, {"--timeout", "nan", "stats"},
        {"--timeout", "inf", "stats"}, {"--timeout", "0", "stats"}, {"--timeout", "86401", "stats"},
        {"--timeout", "1e400", "stats"}}) {
    const testing::CommandOutcome o = run_tool("forkfeed-ctl", args, dir.path());
    EXPECT_TRUE(o.exited && o.code == 2) << joined(args) << ": " << o.describe();
  }
}

TEST(ToolArguments, WorkerRunByHandNamesTheMissingFd) {
  testing::TempDir dir;
  const std::string parent = std::to_string(::getpid());  // run_command spawns it from here
  const testing::CommandOutcome o = run_tool(
      "forkfeed-worker", {"--worker-id", "0", "--incarnation", "1", "--parent-pid", parent, "--die-with-parent", "0"},
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
