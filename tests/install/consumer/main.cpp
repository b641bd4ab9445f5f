// Uses the installed forkfeed through its public headers only. With no arguments, on
// calls that need no data: option validation and opening a dataset that does not exist.
// With `--spawn DIR N`, it reads one pass of the ImageFolder DIR (N images) with spawned
// workers; with `--daemon SOCKET DIR N`, through the forkfeedd listening on SOCKET, as a
// trainer that must not fork would.
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

forkfeed::LoaderOptions small_options(const std::string& folder) {
  forkfeed::LoaderOptions options;
  options.image_folder = folder;
  options.workers = 2;
  options.batch_size = 8;
  options.size = 32;
  return options;
}

// One pass of `source` (a Loader or a Client): every image exactly once, no error.
template <typename Source>
void check_one_pass(Source& source, std::size_t images) {
  std::set<std::uint64_t> seen;
  std::size_t delivered = 0;
  forkfeed::Status failure;
  while (true) {
    auto batch = source.next();
    if (!batch.ok()) {
      failure = batch.status();
      break;
    }
    if (!batch->has_value()) break;
    for (std::uint64_t index : (*batch)->sample_indices()) seen.insert(index);
    delivered += (*batch)->size();
  }
  check(failure.ok(), "one pass without error", "\"" + failure.message() + "\"");
  check(delivered == images && seen.size() == images, "every image delivered exactly once",
        std::to_string(delivered) + " delivered, " + std::to_string(seen.size()) + " distinct, of " +
            std::to_string(images));
}

// Spawned workers are the forkfeed-worker installed next to libforkfeed: this
// executable's own folder has none.
void check_spawning(const std::string& folder, std::size_t images) {
  forkfeed::LoaderOptions options = small_options(folder);
  options.start_method = forkfeed::StartMethod::kSpawn;
  options.max_worker_restarts = 0;
  auto loader = forkfeed::Loader::open(options);
  check(loader.ok(), "Loader::open() with start_method spawn",
        loader.ok() ? folder : "\"" + loader.status().message() + "\"");
  if (loader.ok()) check_one_pass(**loader, images);
}

void check_through_daemon(const std::string& socket, const std::string& folder, std::size_t images) {
  auto client = forkfeed::Client::connect(socket, small_options(folder));
  check(client.ok(), "Client::connect() to the installed forkfeedd",
        client.ok() ? socket : "\"" + client.status().message() + "\"");
  if (client.ok()) check_one_pass(**client, images);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--spawn") {
    check_spawning(argv[2], std::strtoull(argv[3], nullptr, 10));
  } else if (argc == 5 && std::string(argv[1]) == "--daemon") {
    check_through_daemon(argv[2], argv[3], std::strtoull(argv[4], nullptr, 10));
  } else if (argc == 1) {
    check_without_data();
  } else {
    std::fprintf(stderr,
                 "usage: consumer [--spawn IMAGE_FOLDER IMAGES | --daemon SOCKET IMAGE_FOLDER IMAGES]\n");
    return 2;
  }
  return failures == 0 ? 0 : 1;
}
