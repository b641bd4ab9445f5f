// forkfeed's UCX settings (remote/ucx.cpp): the tcp transport's receive segment is set
// only where UCX_TLS lets UCX use tcp, so that a worker on other transports is created
// without UCX's warning of a setting no transport takes (which UCX prints on stdout, into
// a tool's --json).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "base/unique_fd.h"
#include "remote/ucx.h"

namespace forkfeed {
namespace {

TEST(UcxSettings, TcpIsUsableUnlessUcxTlsLeavesItOut) {
  EXPECT_TRUE(tls_may_use_tcp(nullptr));
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
    auto context = UcxContext::create();
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
