// list_shards: a shard spec (brace pattern, directory or list file) to the checked list
// of shard paths a sharded dataset is built from.
#include "dataset/shards/shard_list.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "base/absolute_path.h"
#include "base/dir_stream.h"
#include "base/printable.h"
#include "base/regular_file.h"

namespace forkfeed {
namespace {

constexpr std::string_view kSpecForms =
    "a shard spec is a brace pattern (/data/train-{000000..000146}.tar), one .tar file, a directory of "
    ".tar files or a text file listing one shard per line";

Status bad_pattern(const std::string& spec, std::string_view why) {
  return Status::InvalidArgument("shard pattern " + printable(spec) + ": " + std::string(why));
}

// One {...} group of a pattern, expanded to its alternatives.
Result<std::vector<std::string>> expand_group(const std::string& spec, std::string_view body) {
  if (body.empty()) return bad_pattern(spec, "empty group {}: write a range {000..099} or a list {a,b}");
  if (const std::size_t dots = body.find(".."); dots != std::string_view::npos) {
    const std::string_view first = body.substr(0, dots), last = body.substr(dots + 2);
    auto number = [](std::string_view text, std::uint64_t& out) {
      if (text.empty() || text.size() > 18) return false;  // 18 digits always fit
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
      return ec == std::errc() && end == text.data() + text.size();
    };
    std::uint64_t a = 0, b = 0;
    if (!number(first, a) || !number(last, b)) {
      return bad_pattern(
          spec, "range {" + printable(body) + "} is not two decimal numbers: write it like {000000..000146}");
    }
    if (b < a) {
      return bad_pattern(
          spec, "range {" + printable(body) + "} ends before it starts: write the lower number first");
    }
    if (b - a >= kMaxShards) {
      return bad_pattern(
          spec, "range {" + printable(body) + "} names more than " + std::to_string(kMaxShards) + " shards");
    }
    // bash and braceexpand: a bound written with a leading zero pads every number to the
    // wider bound ({000..146}: 000, 001, ..., 146; {0..10}: 0, 1, ..., 10).
    auto zero_padded = [](std::string_view t) { return t.size() > 1 && t.front() == '0'; };
    const std::size_t width =
        zero_padded(first) || zero_padded(last) ? std::max(first.size(), last.size()) : 0;
    std::vector<std::string> out;
    out.reserve(b - a + 1);
    for (std::uint64_t i = a;; ++i) {
      std::string digits = std::to_string(i);
      if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
      out.push_back(std::move(digits));
      if (i == b) break;
    }
    return out;
  }
  if (body.find(',') == std::string_view::npos) {
    return bad_pattern(spec, "group {" + printable(body) + "} is neither a range {a..b} nor a list {x,y}");
  }
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t comma = body.find(',', begin);
    out.emplace_back(
        body.substr(begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin));
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return out;
}

// The paths a brace pattern names: the product of its groups, leftmost slowest. Their
// count and their bytes are bounded before anything is allocated for them.
Result<std::vector<std::string>> expand_pattern(const std::string& spec) {
  std::vector<std::string> paths{""};
  std::uint64_t bytes = 0;  // of all paths so far
  auto too_large = [&](std::uint64_t would) {
    return bad_pattern(spec, "its names would take " + std::to_string(would >> 20) + " MiB, over the " +
                                 std::to_string(kMaxShardListBytes >> 20) +
                                 " MiB a shard spec may name; shorten the folder names or split the dataset");
  };
  std::size_t pos = 0;
  while (pos < spec.size()) {
    const std::size_t open = spec.find_first_of("{}", pos);
    const std::string_view literal =
        std::string_view(spec).substr(pos, open == std::string::npos ? std::string::npos : open - pos);
    // No overflow: paths.size() <= kMaxShards and every length is under the bound.
    bytes += paths.size() * literal.size();
    if (bytes > kMaxShardListBytes) return too_large(bytes);
    for (std::string& p : paths) p += literal;
    if (open == std::string::npos) break;
    if (spec[open] == '}') return bad_pattern(spec, "'}' without a '{' before it");
    const std::size_t close = spec.find_first_of("{}", open + 1);
    if (close == std::string::npos) return bad_pattern(spec, "'{' without a '}' after it");
    if (spec[close] == '{')
      return bad_pattern(spec, "nested braces are not supported: write one level of {...} groups");
    Result<std::vector<std::string>> alternatives =
        expand_group(spec, std::string_view(spec).substr(open + 1, close - open - 1));
    if (!alternatives.ok()) return alternatives.status();
    if (paths.size() * alternatives->size() > kMaxShards) {
      return bad_pattern(spec, "it names more than " + std::to_string(kMaxShards) + " shards");
    }
    std::uint64_t alternative_bytes = 0;
    for (const std::string& a : *alternatives) alternative_bytes += a.size();
    // Every path is followed by every alternative.
    const std::uint64_t next_bytes = bytes * alternatives->size() + paths.size() * alternative_bytes;
    if (next_bytes > kMaxShardListBytes) return too_large(next_bytes);
    std::vector<std::string> next;
    next.reserve(paths.size() * alternatives->size());
    for (const std::string& p : paths) {
      for (const std::string& a : *alternatives) next.push_back(p + a);
    }
    paths = std::move(next);
    bytes = next_bytes;
    pos = close + 1;
  }
  return paths;
}

// Shard names as a directory or a list file gives them, bounded as a pattern's are.
class BoundedNames {
 public:
  explicit BoundedNames(const std::string& spec) : spec_(spec) {}
  Status add(std::string name) {
    bytes_ += name.size();
    if (names_.size() == kMaxShards || bytes_ > kMaxShardListBytes) {
      return Status::InvalidArgument(
          "shard spec " + printable(spec_) + " names more than " + std::to_string(kMaxShards) +
          " shards or " + std::to_string(kMaxShardListBytes >> 20) + " MiB of names; split the dataset");
    }
    names_.push_back(std::move(name));
    return Status::Ok();
  }
  std::vector<std::string>& names() { return names_; }

 private:
  const std::string& spec_;
  std::vector<std::string> names_;
  std::uint64_t bytes_ = 0;
};

std::string parent_of(const std::string& absolute) {
  const std::size_t slash = absolute.rfind('/');
  return slash == 0 ? "/" : absolute.substr(0, slash);
}

Result<std::vector<std::string>> list_directory(const std::string& spec, const std::string& dir) {
  BoundedNames bounded(spec);
  Status added;
  Result<DirStream> stream = DirStream::open(dir);
  if (!stream.ok()) return stream.status();
  Status listed = stream->for_each(dir, [&](std::string_view name, bool is_dir) {
    if (added.ok() && !is_dir && !name.starts_with('.') && name.size() > 4 && name.ends_with(".tar"))
      added = bounded.add((dir == "/" ? "/" : dir + "/") + std::string(name));
  });
  if (!listed.ok()) return listed;
  if (!added.ok()) return added;
  std::vector<std::string>& names = bounded.names();
  if (names.empty()) {
    return Status::NotFound("shard directory " + printable(spec) +
                            " holds no .tar files; put the shards directly in it, or name them with a brace "
                            "pattern or a list file");
  }
  std::sort(names.begin(), names.end());  // std::string compares bytes as unsigned
  return std::move(names);
}

Result<std::vector<std::string>> read_list_file(const std::string& spec, const std::string& file) {
  Result<std::string> text = read_regular_file(
      file, "shard list", SizeLimit{kMaxShardListBytes, "the limit", "split it into smaller datasets"});
  if (!text.ok()) return text.status();
  const std::string folder = parent_of(file);
  BoundedNames bounded(spec);
  std::string_view rest = *text;
  while (!rest.empty()) {
    const std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    constexpr std::string_view kSpace = " \t\r\f\v";
    const std::size_t first = line.find_first_not_of(kSpace);
    if (first == std::string_view::npos) continue;
    line = line.substr(first, line.find_last_not_of(kSpace) - first + 1);
    if (line.starts_with('#')) continue;
    Status added = bounded.add(line.starts_with('/') ? std::string(line) : folder + "/" + std::string(line));
    if (!added.ok()) return added;
  }
  std::vector<std::string>& paths = bounded.names();
  if (paths.empty()) {
    return Status::InvalidArgument(
        "shard list " + printable(spec) +
        " names no shards; write one shard path per line ('#' starts a comment line)");
  }
  return std::move(paths);
}

// Makes `paths` absolute in place and checks each is an existing regular file, listed
// once: once as a file, whatever its names (a symbolic link, a hard link, ".." through
// another folder), since the kernel says which file a name is.
Status check_shards(const std::string& spec, std::vector<std::string>& paths) {
  struct FileId {
    dev_t device;
    ino_t inode;
    bool operator==(const FileId&) const = default;
  };
  struct FileIdHash {
    std::size_t operator()(const FileId& id) const {
      return std::hash<std::uint64_t>()(id.inode * 31 + id.device);
    }
  };
  std::unordered_map<FileId, std::size_t, FileIdHash> seen;
  seen.reserve(paths.size());
  const std::string total = std::to_string(paths.size());
  for (std::string& p : paths) p = absolute_path(p);
  const std::string origin = " (from the shard spec " + printable(spec) + ")";
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string which = "shard " + std::to_string(i) + " of " + total + ", " + printable(paths[i]);
    struct stat st {};
    if (::stat(paths[i].c_str(), &st) != 0) {
      const Status s = Status::FromErrno(which, errno);
      return Status::FromCode(s.code(), s.message() + origin);
    }
    if (!S_ISREG(st.st_mode)) {
      return Status::InvalidArgument(which + ": not a regular file; a shard is a tar file" + origin);
    }
    const auto [it, inserted] = seen.emplace(FileId{st.st_dev, st.st_ino}, i);
    if (!inserted) {
      const std::size_t first = it->second;
      const std::string names = paths[first] == paths[i] ? "the same file " + printable(paths[i])
                                                         : "one file, named " + printable(paths[first]) +
                                                               " and " + printable(paths[i]);
      return Status::InvalidArgument("shards " + std::to_string(first) + " and " + std::to_string(i) +
                                     " of " + total + " are " + names + origin +
                                     "; list each shard once (its samples would be read twice)");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> list_shards(const std::string& spec) {
  if (spec.empty()) return Status::InvalidArgument("empty shard spec; " + std::string(kSpecForms));
  const std::string absolute = absolute_path(spec);
  Result<std::vector<std::string>> paths = Status::Internal("unset");
  struct stat st {};
  if (::stat(absolute.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      paths = list_directory(spec, absolute);
    } else if (absolute.ends_with(".tar")) {
      paths = std::vector<std::string>{absolute};  // one shard
    } else {
      paths = read_list_file(spec, absolute);
    }
  } else if (errno != ENOENT && errno != ENOTDIR) {
    return Status::FromErrno("cannot access shard spec " + printable(spec), errno);
  } else if (spec.find_first_of("{}") != std::string::npos) {
    paths = expand_pattern(spec);
  } else {
    return Status::NotFound("shard spec " + printable(spec) + " not found: no such file or directory; " +
                            std::string(kSpecForms));
  }
  if (!paths.ok()) return paths.status();
  if (Status s = check_shards(spec, *paths); !s.ok()) return s;
  return paths;
}

}  // namespace forkfeed
