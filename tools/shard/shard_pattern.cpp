// ShardPattern: parsing the printf-style shard pattern and writing its brace spec.
#include "tools/shard/shard_pattern.h"

#include <filesystem>

#include "base/printable.h"

namespace forkfeed {
namespace {

constexpr std::size_t kMaxWidth = 20;  // digits of 2^64 - 1

}  // namespace

Result<ShardPattern> ShardPattern::parse(std::string_view pattern) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("--out " + printable(pattern) + ": " + std::string(why) +
                                   "; expected a path with one %d or %0Nd for the shard number, as in "
                                   "/data/train-%06d.tar");
  };
  if (pattern.find_first_of("{}") != std::string_view::npos)
    return bad("'{' and '}' are refused, since the brace spec that reads the shards back would expand them");
  const std::size_t percent = pattern.find('%');
  if (percent == std::string_view::npos) return bad("no %d in it");
  if (pattern.find('%', percent + 1) != std::string_view::npos) return bad("more than one '%' in it");
  std::size_t at = percent + 1;
  std::size_t width = 0;
  if (at < pattern.size() && pattern[at] == '0') {
    ++at;
    const std::size_t digits = at;
    while (at < pattern.size() && pattern[at] >= '0' && pattern[at] <= '9') {
      width = width * 10 + static_cast<std::size_t>(pattern[at] - '0');
      if (width > kMaxWidth) return bad("the padding of %0Nd is over 20 digits");
      ++at;
    }
    if (at == digits || width == 0) return bad("%0 must be followed by a width, as in %06d");
  }
  if (at >= pattern.size() || pattern[at] != 'd') return bad("the '%' is not a %d or %0Nd");
  std::string prefix(pattern.substr(0, percent));
  std::string suffix(pattern.substr(at + 1));
  if (suffix.ends_with('/')) return bad("it names folders, not files");
  // Absolute, so that the printed spec reads the shards back from any working directory.
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(prefix.empty() ? "./" : prefix, ec);
  if (ec) return bad("cannot make it absolute: " + ec.message());
  std::string normal = absolute.lexically_normal().string();
  // lexically_normal drops nothing after the last '/', but a prefix ending in '/' (or
  // empty) stays a folder: keep its trailing '/'.
  if ((prefix.empty() || prefix.ends_with('/')) && !normal.ends_with('/')) normal += '/';
  return ShardPattern(std::move(normal), std::move(suffix), width);
}

std::string ShardPattern::number(std::uint64_t n) const {
  std::string digits = std::to_string(n);
  if (digits.size() < width_) digits.insert(0, width_ - digits.size(), '0');
  return digits;
}

std::string ShardPattern::path(std::uint64_t shard) const { return prefix_ + number(shard) + suffix_; }

Status ShardPattern::check_count(std::uint64_t count) const {
  if (count == 0 || width_ <= 1) return Status::Ok();
  const std::string last = std::to_string(count - 1);
  if (last.size() <= width_) return Status::Ok();
  return Status::InvalidArgument("--out " +
                                 printable(prefix_ + "%0" + std::to_string(width_) + "d" + suffix_) + ": " +
                                 std::to_string(count) + " shards need " + std::to_string(last.size()) +
                                 " digits, more than its padding of " + std::to_string(width_) + "; use %0" +
                                 std::to_string(last.size()) + "d or a larger --shard-size");
}

std::string ShardPattern::brace_spec(std::uint64_t count) const {
  return prefix_ + "{" + number(0) + ".." + number(count - 1) + "}" + suffix_;
}

std::string ShardPattern::folder() const {
  const std::size_t slash = prefix_.rfind('/');
  return slash == 0 ? "/" : prefix_.substr(0, slash);
}

}  // namespace forkfeed
