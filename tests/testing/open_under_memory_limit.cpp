// open_under_memory_limit SPEC SLACK_MIB: opens a Loader over the tar shards SPEC in a
// process whose address space may grow only SLACK_MIB beyond what it holds once started,
// and prints the outcome: "opened", or "<code name>: <message>". Exit 0 when it printed.
//
// A process of its own, exec'd: in a test process, arenas and free memory left by
// earlier tests would make room that the limit does not see.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "forkfeed/loader.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: open_under_memory_limit SPEC SLACK_MIB\n");
    return 2;
  }
  std::uint64_t pages = 0;
  std::ifstream("/proc/self/statm") >> pages;
  const rlim_t limit = static_cast<rlim_t>(pages * ::sysconf(_SC_PAGESIZE) + (std::stoull(argv[2]) << 20));
  const rlimit tight{limit, limit};
  if (pages == 0 || ::setrlimit(RLIMIT_AS, &tight) != 0) {
    std::perror("open_under_memory_limit: setrlimit");
    return 2;
  }
  forkfeed::LoaderOptions o;
  o.shards = argv[1];
  o.workers = 1;
  o.batch_size = 2;
  o.size = 16;
  o.log_level = "off";
  const auto opened = forkfeed::Loader::open(o);
  if (opened.ok()) {
    std::printf("opened\n");
  } else {
    std::printf("%s: %s\n", std::string(forkfeed::Status::CodeName(opened.status().code())).c_str(),
                opened.status().message().c_str());
  }
  return 0;
}
