// forkfeed's UCX settings (remote/ucx.cpp): the tcp transport's receive segment is set
// only where UCX_TLS lets UCX use tcp, so that a worker on other transports is created
// without UCX's warning of a setting no transport takes (which UCX prints on stdout, into
// a tool's --json); a context knows the segment it receives in, as the hello tells it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "base/unique_fd.h"
#include "remote/ucx.h"

namespace forkfeed {
namespace {

TEST(UcxSettings, TcpIsUsableUnlessUcxTlsLeavesItOut) {
  EXPECT_TRUE(tls_may_use_tcp(""));
  EXPECT_TRUE(tls_may_use_tcp("tcp"));
  EXPECT_TRUE(tls_may_use_tcp("sm,tcp"));
  EXPECT_TRUE(tls_may_use_tcp("all"));
  EXPECT_TRUE(tls_may_use_tcp("^sm"));
  EXPECT_TRUE(tls_may_use_tcp("^rc,ud"));
  EXPECT_FALSE(tls_may_use_tcp("sm,self"));
  EXPECT_FALSE(tls_may_use_tcp("rc"));
  EXPECT_FALSE(tls_may_use_tcp("^tcp"));
  EXPECT_FALSE(tls_may_use_tcp("^sm,tcp"));
  EXPECT_FALSE(tls_may_use_tcp("tcpx"));  // a name, not a prefix
}

TEST(UcxSettings, SizesAreReadAsUcxReadsThem) {
  EXPECT_EQ(parse_ucx_size("65536"), 65536u);
  EXPECT_EQ(parse_ucx_size("64k"), 65536u);
  EXPECT_EQ(parse_ucx_size("64K"), 65536u);
  EXPECT_EQ(parse_ucx_size("512KB"), 524288u);
  EXPECT_EQ(parse_ucx_size("1m"), 1048576u);
  EXPECT_EQ(parse_ucx_size("2G"), 2147483648u);
  EXPECT_EQ(parse_ucx_size("7b"), 7u);
  for (const char* not_one : {"", "k", "64 K", "64KK", "64x", "-1", "auto", "inf", "99999999999999999999G"}) {
    EXPECT_EQ(parse_ucx_size(not_one), std::nullopt) << not_one;
  }
}

TEST(UcxSettings, AContextKnowsTheTcpSegmentItReceivesIn) {
  if (!UcxApi::get().ok()) GTEST_SKIP() << "UCX is not installed";
  const auto segment = [](const char* tls, const char* set, std::uint64_t asked) {
    if (tls != nullptr) ::setenv("UCX_TLS", tls, 1);
    if (set != nullptr) ::setenv("UCX_TCP_RX_SEG_SIZE", set, 1);
    auto context = UcxContext::create(asked);
    ::unsetenv("UCX_TLS");
    ::unsetenv("UCX_TCP_RX_SEG_SIZE");
    EXPECT_TRUE(context.ok()) << context.status().message();
    return context.ok() ? (*context)->tcp_segment() : std::nullopt;
  };
  EXPECT_EQ(segment(nullptr, nullptr, 0), kUcxDefaultTcpSegment);
  EXPECT_EQ(segment("tcp", nullptr, kLargeTcpSegment), kLargeTcpSegment);
  EXPECT_EQ(segment("tcp", "128K", kLargeTcpSegment), 131072u) << "the environment's, as UCX takes it";
  EXPECT_EQ(segment("sm,self", nullptr, kLargeTcpSegment), std::nullopt) << "no tcp: no segment";
  // Written as UCX reads it, not only as it prints it.
  EXPECT_EQ(segment("tcp", "1mbytes", kLargeTcpSegment), 1048576u);
  EXPECT_EQ(segment("tcp", "+262144", 0), 262144u);
}

TEST(UcxSettings, ASegmentUcxCannotReadIsAnErrorThatNamesIt) {
  if (!UcxApi::get().ok()) GTEST_SKIP() << "UCX is not installed";
  ::setenv("UCX_TCP_RX_SEG_SIZE", "banana", 1);
  auto context = UcxContext::create(kLargeTcpSegment);
  ::setenv("UCX_TLS", "sm,self", 1);
  auto without_tcp = UcxContext::create(kLargeTcpSegment);
  ::unsetenv("UCX_TLS");
  ::unsetenv("UCX_TCP_RX_SEG_SIZE");
  ASSERT_FALSE(context.ok()) << "a context whose tcp segment is unknown";
  EXPECT_NE(context.status().message().find("UCX_TCP_RX_SEG_SIZE"), std::string::npos)
      << context.status().message();
  EXPECT_TRUE(without_tcp.ok()) << "no tcp, no segment to know: " << without_tcp.status().message();
}

// Found from outside: UCX_TCP_RX_SEG_SIZE=-1 was reported as "=inf", which the user never
// wrote; and a segment smaller than UCX_TCP_TX_SEG_SIZE (0, 1K), which makes UCX refuse
// every worker, was found only when the worker was made, after the trainer had connected,
// and the trainer was told its daemon was lost. A context names the setting as it was set
// and refuses such a segment itself, saying what to set.
TEST(UcxSettings, ASegmentUcxWouldRefuseIsRefusedNamingItAsItWasSet) {
  if (!UcxApi::get().ok()) GTEST_SKIP() << "UCX is not installed";
  const auto refusal = [](const char* rx, const char* tx, std::uint64_t asked) {
    ::setenv("UCX_TLS", "tcp", 1);
    if (rx != nullptr) ::setenv("UCX_TCP_RX_SEG_SIZE", rx, 1);
    if (tx != nullptr) ::setenv("UCX_TCP_TX_SEG_SIZE", tx, 1);
    auto context = UcxContext::create(asked);
    for (const char* name : {"UCX_TLS", "UCX_TCP_RX_SEG_SIZE", "UCX_TCP_TX_SEG_SIZE"}) ::unsetenv(name);
    if (context.ok()) return std::string("accepted");
    EXPECT_EQ(context.status().code(), Status::Code::kInvalidArgument) << context.status().message();
    return context.status().message();
  };
  const std::string minus_one = refusal("-1", nullptr, kLargeTcpSegment);
  EXPECT_NE(minus_one.find("UCX_TCP_RX_SEG_SIZE=-1 (UCX reads it as inf)"), std::string::npos) << minus_one;
  EXPECT_EQ(minus_one.find("UCX_TCP_RX_SEG_SIZE=inf"), std::string::npos) << minus_one;
  for (const char* small : {"0", "1K", "8191"}) {
    const std::string m = refusal(small, nullptr, kLargeTcpSegment);
    EXPECT_NE(m.find(std::string("UCX_TCP_RX_SEG_SIZE=") + small), std::string::npos) << m;
    EXPECT_NE(m.find("is smaller than UCX_TCP_TX_SEG_SIZE=8K"), std::string::npos) << m;
    EXPECT_NE(m.find("set UCX_TCP_RX_SEG_SIZE to 8K or more, or unset it"), std::string::npos) << m;
  }
  EXPECT_EQ(refusal("8K", nullptr, kLargeTcpSegment), "accepted") << "as large as UCX sends in";
  // Forkfeed's own segment under a larger UCX_TCP_TX_SEG_SIZE: nothing of the user's to unset.
  const std::string sends_more = refusal(nullptr, "1M", kLargeTcpSegment);
  EXPECT_NE(sends_more.find("the tcp receive segment of 524288 bytes is smaller than UCX_TCP_TX_SEG_SIZE=1M"),
            std::string::npos)
      << sends_more;
  EXPECT_EQ(sends_more.find("unset it"), std::string::npos) << sends_more;
  EXPECT_EQ(refusal(nullptr, "1M", 0).find("the tcp receive segment of 65536 bytes"), 0u);
}

// What UCX printed on stdout while a context and a worker were made under UCX_TLS=`tls`.
std::string printed_making_a_worker(const char* tls) {
  ::setenv("UCX_TLS", tls, 1);
  std::fflush(stdout);
  char path[] = "/tmp/forkfeed-ucx-stdout-XXXXXX";
  UniqueFd file(::mkstemp(path));
  EXPECT_TRUE(file.valid());
  ::unlink(path);
  UniqueFd saved(::dup(STDOUT_FILENO));
  ::dup2(file.get(), STDOUT_FILENO);
  {
    auto context = UcxContext::create(kLargeTcpSegment);
    EXPECT_TRUE(context.ok()) << context.status().message();
    if (context.ok()) {
      auto worker = UcxWorker::create(*context);
      EXPECT_TRUE(worker.ok()) << worker.status().message();
    }
  }
  std::fflush(stdout);
  ::dup2(saved.get(), STDOUT_FILENO);
  ::unsetenv("UCX_TLS");
  std::string printed;
  char buffer[4096];
  ssize_t n = 0;
  ::lseek(file.get(), 0, SEEK_SET);
  while ((n = ::read(file.get(), buffer, sizeof buffer)) > 0) printed.append(buffer, n);
  return printed;
}

TEST(UcxSettings, AWorkerWithoutTcpIsMadeWithoutAWarning) {
  if (!UcxApi::get().ok()) GTEST_SKIP() << "UCX is not installed";
  for (const char* tls : {"sm,self", "tcp", "^tcp"}) {
    EXPECT_EQ(printed_making_a_worker(tls), "") << "UCX_TLS=" << tls;
  }
}

}  // namespace
}  // namespace forkfeed
