// Token files and their comparison.
#include "remote/token.h"

#include "base/printable.h"
#include "base/regular_file.h"

namespace forkfeed {

inline constexpr std::uint64_t kMaxTokenBytes = 4096;

Result<std::string> read_token_file(const std::string& path, std::string_view what) {
  constexpr std::string_view kMake =
      "it must hold the token, e.g. made with: head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE";
  if (path.empty()) return Status::InvalidArgument(std::string(what) + " is not set");
  // A directory, a FIFO or /dev/zero is refused at once, not read (base/regular_file.h).
  auto token = read_regular_file(path, what, SizeLimit{kMaxTokenBytes, "4 KiB", kMake});
  if (!token.ok()) {
    if (token.status().code() == Status::Code::kInvalidArgument) return token.status();
    return Status::InvalidArgument(std::string(what) + " " + printable(path) + " cannot be read (" +
                                   token.status().message() + "); " + std::string(kMake));
  }
  std::string text = std::move(token).value();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) {
    return Status::InvalidArgument(std::string(what) + " " + printable(path) + " is empty; " + std::string(kMake));
  }
  return text;
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
