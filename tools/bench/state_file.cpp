// State files: read whole, written through a temporary file and an atomic rename; only
// regular files (base/regular_file.h says why).
#include "tools/bench/state_file.h"

#include <cctype>

#include "base/atomic_file.h"
#include "base/regular_file.h"
#include "loader/checkpoint.h"

namespace forkfeed::bench {
namespace {

constexpr SizeLimit kStateLimit{kMaxStateBytes, "the limit of", "not a forkfeed state"};

}  // namespace

Result<std::string> read_state_file(const std::string& path) {
  Result<std::string> read = read_regular_file(path, "--resume file", kStateLimit);
  if (!read.ok()) return read.status();
  std::string& state = read.value();
  while (!state.empty() && std::isspace(static_cast<unsigned char>(state.back()))) state.pop_back();
  if (state.empty())
    return Status::InvalidArgument("--resume file " + path + " is empty: not a forkfeed state");
  return std::move(state);
}

Status check_state_destination(const std::string& path) {
  return check_replaceable(path, "--save-state file");
}

Status write_state_file(const std::string& path, std::string_view state) {
  return replace_regular_file(path, std::string(state) + "\n", "--save-state file");
}

}  // namespace forkfeed::bench
