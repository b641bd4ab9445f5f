// Uses the installed forkfeed through its public headers only. With no arguments, on
// calls that need no data: option validation and opening a dataset that does not exist.
// With `--daemon SOCKET DIR N`, it reads one pass of the ImageFolder DIR (N images)
// through the forkfeedd listening on SOCKET, as a trainer that must not fork would.
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include <forkfeed/client.h>
#include <forkfeed/loader.h>

namespace {

int failures = 0;

void check(bool ok, const char* what, const std::string& detail) {
  std::printf("%s: %s (%s)\n", ok ? "ok  " : "FAIL", what, detail.c_str());
  if (!ok) ++failures;
}

void check_without_data() {
  forkfeed::LoaderOptions options;  // no dataset set
  forkfeed::Status status = forkfeed::validate(options);
  check(!status.ok() && status.message().find("dataset") != std::string::npos,
        "validate() without a dataset is an error that mentions the dataset", "\"" + status.message() + "\"");

  options.image_folder = "/nonexistent/forkfeed-consumer-check";
  auto loader = forkfeed::Loader::open(options);
  check(!loader.ok() && loader.status().code() == forkfeed::Status::Code::kNotFound,
        "Loader::open() on a missing folder is NotFound",
        loader.ok() ? std::string("opened") : "\"" + loader.status().message() + "\"");
}

void check_through_daemon(const std::string& socket, const std::string& folder, std::size_t images) {
  forkfeed::LoaderOptions options;
  options.image_folder = folder;
  options.workers = 2;
  options.batch_size = 8;
  options.size = 32;
  auto client = forkfeed::Client::connect(socket, options);
  check(client.ok(), "Client::connect() to the installed forkfeedd",
        client.ok() ? socket : "\"" + client.status().message() + "\"");
  if (!client.ok()) return;
  std::set<std::uint64_t> seen;
  std::size_t delivered = 0;
  forkfeed::Status failure;
  while (true) {
    auto batch = (*client)->next();
    if (!batch.ok()) {
      failure = batch.status();
      break;
    }
    if (!batch->has_value()) break;
    for (std::uint64_t index : (*batch)->sample_indices()) seen.insert(index);
    delivered += (*batch)->size();
  }
  check(failure.ok(), "one pass through the daemon without error", "\"" + failure.message() + "\"");
  check(delivered == images && seen.size() == images, "every image delivered exactly once",
        std::to_string(delivered) + " delivered, " + std::to_string(seen.size()) + " distinct, of " +
            std::to_string(images));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--daemon") {
    check_through_daemon(argv[2], argv[3], std::strtoull(argv[4], nullptr, 10));
  } else if (argc == 1) {
    check_without_data();
  } else {
    std::fprintf(stderr, "usage: consumer [--daemon SOCKET IMAGE_FOLDER IMAGES]\n");
    return 2;
  }
  return failures == 0 ? 0 : 1;
}
