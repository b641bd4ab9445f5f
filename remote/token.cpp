// Token files and their comparison.
#include "remote/token.h"

#include <fstream>
#include <iterator>

#include "base/printable.h"

namespace forkfeed {

inline constexpr std::size_t kMaxTokenBytes = 4096;

Result<std::string> read_token_file(const std::string& path, std::string_view what) {
  const auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(std::string(what) + " " + printable(path) + " " + why +
                                   "; it must hold the token, e.g. made with: head -c 32 /dev/urandom | base64 > FILE; "
                                   "chmod 600 FILE");
  };
  if (path.empty()) return Status::InvalidArgument(std::string(what) + " is not set");
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad("cannot be read");
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.empty()) return bad("is empty");
  if (token.size() > kMaxTokenBytes) return bad("holds more than 4 KiB");
  return token;
}

bool tokens_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer is looked at; the length difference is folded in.
  const std::size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

}  // namespace forkfeed
