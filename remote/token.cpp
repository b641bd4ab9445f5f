// Token files and their comparison.
#include "remote/token.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/printable.h"
#include "base/regular_file.h"

namespace forkfeed {
namespace {

constexpr std::uint64_t kMaxTokenBytes = 4096;
// What is not the token at either end, and is not counted in it: the "C" locale's isspace.
constexpr std::string_view kWhitespace = " \t\n\r\v\f";
constexpr std::string_view kMake =
    "it must hold the token, e.g. made with: head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE";

}  // namespace

Result<std::string> read_token_file(const std::string& path, std::string_view what) {
  if (path.empty()) return Status::InvalidArgument(std::string(what) + " is not set");
  const std::string named = std::string(what) + " " + printable(path);
  // A directory, a FIFO or /dev/zero is refused at once, not read (base/regular_file.h).
  const SizeLimit limit{kMaxTokenBytes, "4 KiB", kMake};
  auto file = open_regular_file(path, what, limit);
  if (!file.ok()) {
    if (file.status().code() == Status::Code::kInvalidArgument) return file.status();
    return Status::InvalidArgument(named + " cannot be read (" + file.status().message() + "); " +
                                   std::string(kMake));
  }
  // As ssh treats a private key: a secret of another user's, or one that other users may
  // read, is no secret of this user's, and the one who left it so is told at once rather
  // than never. Root is no exception: a file someone else owns, they may rewrite.
  if (const uid_t user = ::geteuid(); file->owner != user) {
    return Status::InvalidArgument(
        named + " is owned by uid " + std::to_string(file->owner) + ", not by this process's user (uid " +
        std::to_string(user) + "): its owner may read or change the token, which is a password; chown " +
        std::to_string(user) + " " + printable(path) + ", or use a copy of your own (chmod 600)");
  }
  if ((file->mode & 077) != 0) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(file->mode & 07777));
    return Status::InvalidArgument(named + " has mode " + mode +
                                   ": other users may read or change the token, which is a password; "
                                   "chmod 600 " +
                                   printable(path));
  }
  auto token = read_opened_file(*file, path, what, limit);
  if (!token.ok()) return token.status();
  const std::string& text = *token;
  if (text.empty()) return Status::InvalidArgument(named + " is empty; " + std::string(kMake));
  const std::size_t first = text.find_first_not_of(kWhitespace);
  if (first == std::string::npos) {
    return Status::InvalidArgument(named + " holds only whitespace; " + std::string(kMake));
  }
  std::string trimmed = text.substr(first, text.find_last_not_of(kWhitespace) + 1 - first);
  const auto counted = static_cast<std::size_t>(std::count_if(
      trimmed.begin(), trimmed.end(), [](char c) { return kWhitespace.find(c) == std::string_view::npos; }));
  if (counted < kMinTokenBytes) {
    return Status::InvalidArgument(named + " holds a token of " + std::to_string(counted) +
                                   " bytes that are not whitespace, fewer than " +
                                   std::to_string(kMinTokenBytes) + ": a short token is guessed; " +
                                   std::string(kMake));
  }
  return trimmed;
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
