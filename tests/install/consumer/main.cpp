// Uses the installed forkfeed through its public header only, on calls that need no
// data: option validation and opening a dataset that does not exist.
#include <cstdio>
#include <string>

#include <forkfeed/loader.h>

namespace {

int failures = 0;

void check(bool ok, const char* what, const std::string& detail) {
  std::printf("%s: %s (%s)\n", ok ? "ok  " : "FAIL", what, detail.c_str());
  if (!ok) ++failures;
}

}  // namespace

int main() {
  forkfeed::LoaderOptions options;  // no dataset set
  forkfeed::Status status = forkfeed::validate(options);
  check(!status.ok() && status.message().find("dataset") != std::string::npos,
        "validate() without a dataset is an error that mentions the dataset", "\"" + status.message() + "\"");

  options.image_folder = "/nonexistent/forkfeed-consumer-check";
  auto loader = forkfeed::Loader::open(options);
  check(!loader.ok() && loader.status().code() == forkfeed::Status::Code::kNotFound,
        "Loader::open() on a missing folder is NotFound",
        loader.ok() ? std::string("opened") : "\"" + loader.status().message() + "\"");

  return failures == 0 ? 0 : 1;
}
