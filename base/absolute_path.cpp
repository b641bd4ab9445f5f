// absolute_path(): the working directory prefixed, "." and empty components dropped, ".."
// resolved by the kernel.
#include "base/absolute_path.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

namespace forkfeed {
namespace {

std::string working_directory() {
  std::string cwd(4096, '\0');
  while (::getcwd(cwd.data(), cwd.size()) == nullptr && errno == ERANGE) cwd.resize(cwd.size() * 2);
  return cwd.c_str();
}

std::string joined(const std::vector<std::string_view>& parts, std::size_t from, std::size_t to) {
  std::string out;
  for (std::size_t i = from; i < to; ++i) {
    out += '/';
    out += parts[i];
  }
  return out;
}

}  // namespace

std::string absolute_path(const std::string& path) {
  if (path.empty()) return path;
  const std::string full = path.starts_with('/') ? path : working_directory() + "/" + path;
  std::vector<std::string_view> parts;
  std::size_t last_up = 0;  // one past the last ".." component; 0: none
  for (std::string_view rest = full; !rest.empty();) {
    const std::size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    parts.push_back(part);
    if (part == "..") last_up = parts.size();
  }
  if (last_up > 0) {
    const std::string head = joined(parts, 0, last_up);
    const std::unique_ptr<char, decltype(&std::free)> resolved(::realpath(head.c_str(), nullptr), &std::free);
    if (resolved != nullptr) {
      std::string out = resolved.get();
      if (out == "/") out.clear();
      out += joined(parts, last_up, parts.size());
      return out.empty() ? "/" : out;
    }
  }
  const std::string out = joined(parts, 0, parts.size());
  return out.empty() ? "/" : out;
}

}  // namespace forkfeed
