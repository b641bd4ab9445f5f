// One pass over a tar shard's headers, read through a window: a pread of 64 KB brings the
// next dozens of headers where members are small, a pread of 512 bytes the next one where
// they are not; a member's data is skipped by offset. Only GNU long names and pax headers,
// which are small and bounded here, are read beyond the header blocks — and, when content
// digests are asked for, each member's windows, through the same window. The same pass
// reads one member's headers held in memory (member_name_in).
#include "formats/tar_scan.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "base/printable.h"
#include "base/regular_file.h"
#include "formats/content_digest.h"
#include "formats/tar_format.h"

namespace forkfeed {
namespace {

using Block = std::array<unsigned char, tar::kBlock>;

// A GNU long name or a pax header larger than this is refused: real ones are a few
// hundred bytes, and the scan must not allocate what a corrupt size field says.
constexpr std::uint64_t kMaxExtendedBytes = std::uint64_t{1} << 20;

constexpr std::string_view kReCopy = "; re-copy the shard";

std::uint64_t padded(std::uint64_t bytes) { return (bytes + tar::kBlock - 1) / tar::kBlock * tar::kBlock; }

// The field's bytes up to its first NUL (a full field has none).
std::string_view text_of(const Block& block, tar::Field field) {
  const char* begin = reinterpret_cast<const char*>(block.data()) + field.at;
  return {begin, static_cast<std::size_t>(std::find(begin, begin + field.size, '\0') - begin)};
}

// A numeric field as GNU tar reads it: octal digits after optional spaces, ended by a
// space, a NUL or the field's end; or, with the top bit of the first byte set, a
// big-endian base-256 number (GNU's form for sizes of 8 GiB and more). Negative or
// overflowing values and anything else are nullopt.
std::optional<std::uint64_t> number_of(const Block& block, tar::Field field) {
  const unsigned char* p = block.data() + field.at;
  const unsigned char* end = p + field.size;
  if (*p & 0x80) {
    if (*p & 0x40) return std::nullopt;  // negative
    std::uint64_t value = *p & 0x3f;
    for (++p; p < end; ++p) {
      if (value >> 56) return std::nullopt;
      value = value << 8 | *p;
    }
    return value;
  }
  while (p < end && *p == ' ') ++p;
  const unsigned char* digits = p;
  std::uint64_t value = 0;
  for (; p < end && *p >= '0' && *p <= '7'; ++p) {
    if (value >> 61) return std::nullopt;
    value = value << 3 | static_cast<std::uint64_t>(*p - '0');
  }
  if (p == digits || (p < end && *p != ' ' && *p != '\0')) return std::nullopt;
  return value;
}

bool all_zero(const Block& block) {
  return std::all_of(block.begin(), block.end(), [](unsigned char b) { return b == 0; });
}

// The name a header stores: POSIX ustar joins prefix and name; GNU's "ustar  " headers
// keep other things where the prefix would be, and v7 headers have neither.
std::string header_name(const Block& block) {
  std::string name(text_of(block, tar::kName));
  if (std::memcmp(block.data() + tar::kMagic.at, "ustar\0", tar::kMagic.size) == 0) {
    const std::string_view prefix = text_of(block, tar::kPrefix);
    if (!prefix.empty()) name = std::string(prefix) + "/" + name;
  }
  return name;
}

std::optional<std::uint64_t> decimal(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

std::string_view extended_kind(char type) {
  switch (type) {
    case 'L': return "GNU long name";
    case 'K': return "GNU long link name";
    case 'g': return "pax global header";
    default: return "pax header";
  }
}

std::string quoted_name(std::string_view name) {
  std::string text = printable_cut(name);
  text.insert(text.begin(), '\'');  // not "'" + text: GCC 12 warns falsely (-Wrestrict)
  text.push_back('\'');
  return text;
}

class TarScanner {
 public:
  TarScanner(int fd, std::string_view shard, std::uint64_t file_size,
             const std::function<Status(TarMember&&)>& visit, std::optional<ContentCheck> content)
      : fd_(fd), shard_(printable(shard)), file_size_(file_size), visit_(visit), content_(content) {}
  // Over `headers` in memory, the start of an archive whose data may lie past them.
  TarScanner(std::span<const unsigned char> headers, std::string_view shard,
             const std::function<Status(TarMember&&)>& visit)
      : fd_(-1),
        shard_(printable(shard)),
        file_size_(std::numeric_limits<std::uint64_t>::max()),
        visit_(visit),
        memory_(headers),
        in_memory_(true),
        content_(std::nullopt) {}

  Status run() {
    if (file_size_ == 0)
      return Status::BadData(shard_ + " is empty (0 bytes), not a tar file" + std::string(kReCopy));
    std::uint64_t at = 0;
    for (;;) {
      if (at == file_size_) return end_of_archive(at);  // no end blocks, as GNU tar allows
      Block block;
      if (Status s = read_header(at, block); !s.ok()) return s;
      if (all_zero(block)) return end_of_archive(at);
      if (Status s = check_header(at, block); !s.ok()) return s;
      Result<std::uint64_t> next = entry(at, block);
      if (!next.ok()) return next.status();
      at = *next;
    }
  }

 private:
  Status read_header(std::uint64_t at, Block& block) {
    if (at == 0 && file_size_ < tar::kBlock) {
      return Status::BadData(shard_ + " is not a tar file (" + std::to_string(file_size_) +
                             " bytes, less than one 512-byte tar header)");
    }
    if (in_memory_) return read_exact(at, block.data(), block.size(), "a tar header");
    if (at < window_at_ || at + tar::kBlock > window_at_ + window_.size()) {
      // Where the member before was small, read ahead: the next headers are near.
      const bool near = at - std::min(at, last_header_at_) <= kNearHeaders;
      const std::uint64_t left = file_size_ - std::min(file_size_, at);
      // Not near: the header, and with content digests the first window of its data.
      const std::uint64_t want = near       ? kWindowBytes
                                 : content_ ? tar::kBlock + kContentWindowBytes
                                            : tar::kBlock;
      window_.resize(left > tar::kBlock ? std::min(want, left) : tar::kBlock);
      window_at_ = at;
      Status s = read_exact(at, window_.data(), window_.size(), "a tar header");
      if (!s.ok() && window_.size() > tar::kBlock) {
        // The read ahead failed (a file shorter than when it was sized, a bad sector in
        // data): the header alone, whose failure is then the one to report.
        window_.resize(tar::kBlock);
        s = read_exact(at, window_.data(), window_.size(), "a tar header");
      }
      if (!s.ok()) {
        window_.clear();
        return s;
      }
    }
    std::memcpy(block.data(), window_.data() + (at - window_at_), block.size());
    last_header_at_ = at;
    return Status::Ok();
  }

  // " after member 'x'", or nothing before the first entry.
  std::string after_previous() const {
    return previous_.empty() ? "" : " after member " + quoted_name(previous_);
  }
  // The same in parentheses, to end a message with.
  std::string placed() const {
    return previous_.empty() ? "" : " (after member " + quoted_name(previous_) + ")";
  }

  // `placed_after_previous`: for what has no name of its own (a header), say where it is.
  Status truncated(std::string_view what, std::uint64_t bytes, std::uint64_t at, std::uint64_t ends_at,
                   bool placed_after_previous = true) const {
    return Status::BadData(shard_ + " is truncated: " + std::string(what) + " needs " +
                           std::to_string(bytes) + " bytes at offset " + std::to_string(at) +
                           ", the file ends at " + std::to_string(ends_at) +
                           (placed_after_previous ? placed() : "") + std::string(kReCopy));
  }

  Status read_exact(std::uint64_t at, void* buffer, std::size_t bytes, std::string_view what) const {
    if (in_memory_) {
      if (at > memory_.size() || bytes > memory_.size() - at) {
        return truncated(what, bytes, at, memory_.size());
      }
      std::memcpy(buffer, memory_.data() + at, bytes);
      return Status::Ok();
    }
    std::size_t done = 0;
    while (done < bytes) {
      const ssize_t n =
          ::pread(fd_, static_cast<char*>(buffer) + done, bytes - done, static_cast<off_t>(at + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::FromErrno("cannot read tar shard " + shard_, errno);
      if (n == 0) return truncated(what, bytes, at, std::min(file_size_, at + done));  // it shrank
      done += static_cast<std::size_t>(n);
    }
    return Status::Ok();
  }

  Status end_of_archive(std::uint64_t at) const {
    if (!next_name_ && !next_size_) return Status::Ok();
    return Status::BadData(shard_ + " ends at offset " + std::to_string(at) +
                           " right after an extended header (GNU long name or pax) that names no member" +
                           std::string(kReCopy));
  }

  Status check_header(std::uint64_t at, const Block& block) const {
    const std::optional<std::uint64_t> stored = number_of(block, tar::kChecksum);
    const tar::Checksums sums = tar::header_checksums(block);
    if (stored && (static_cast<std::int64_t>(*stored) == sums.as_unsigned ||
                   static_cast<std::int64_t>(*stored) == sums.as_signed)) {
      return Status::Ok();
    }
    if (at == 0) return Status::BadData(shard_ + " is not a tar file (bad header checksum at offset 0)");
    return Status::BadData(shard_ + " has a corrupt tar header at offset " + std::to_string(at) +
                           " (bad checksum)" + after_previous() + std::string(kReCopy));
  }

  // Handles the entry whose header is `block` at `at`; returns where the next header is.
  Result<std::uint64_t> entry(std::uint64_t at, const Block& block) {
    const char type = static_cast<char>(block[tar::kTypeflag.at]);
    const bool extended = type == 'L' || type == 'K' || type == 'x' || type == 'g';
    const bool regular = type == '0' || type == '\0' || type == '7';
    std::string name = header_name(block);
    const std::optional<std::uint64_t> stored_size = number_of(block, tar::kSize);
    if (!stored_size) {
      return Status::BadData(
          shard_ + ": the tar header of " + quoted_name(name) + " at offset " + std::to_string(at) +
          " has a size field that is not an octal number (" +
          quoted_name(std::string_view(reinterpret_cast<const char*>(block.data()) + tar::kSize.at,
                                       tar::kSize.size)) +
          ")" + std::string(kReCopy));
    }
    std::uint64_t size = *stored_size;
    // Where this entry's headers began: its first extended header, if it has one.
    const std::uint64_t first_header = extended ? at : chain_start_.value_or(at);
    if (extended && !chain_start_) chain_start_ = at;
    bool named_before = false;  // an extended header gave a name its own header does not hold
    if (!extended) {
      chain_start_.reset();
      if (next_name_) {
        std::string given = *std::exchange(next_name_, std::nullopt);
        named_before = given != name;
        name = std::move(given);
      }
      if (next_size_) size = *std::exchange(next_size_, std::nullopt);
    }
    // POSIX: links, devices, directories and FIFOs have no data, whatever the size says.
    if (type >= '1' && type <= '6') size = 0;
    const std::uint64_t data_at = at + tar::kBlock;
    if (padded(size) < size || padded(size) > file_size_ - std::min(file_size_, data_at)) {
      const std::string what =
          extended ? "the " + std::string(extended_kind(type)) : "member " + quoted_name(name);
      // Past the data, the padding to a whole block is missing: GNU tar refuses that too.
      const bool data_fits = size <= file_size_ - std::min(file_size_, data_at);
      return truncated(what, data_fits ? padded(size) : size, data_at, file_size_, extended);
    }
    const std::uint64_t next = data_at + padded(size);

    if (type == 'L' || type == 'x' || type == 'g') {
      Result<std::string> data = read_extended(at, data_at, size, type);
      if (!data.ok()) return data.status();
      if (type == 'L') {
        const std::string& long_name = *data;
        next_name_ = long_name.substr(0, long_name.find('\0'));
      } else if (Status s = apply_pax(*data, type == 'g', at); !s.ok()) {
        return s;
      }
      return next;
    }
    if (extended) return next;  // 'K': a long link name, of no use here
    previous_ = name;
    // Old tars mark a directory by a trailing slash on a regular-file header.
    if (!regular || name.empty() || name.back() == '/') return next;
    const std::uint64_t name_headers = named_before ? data_at - first_header : tar::kBlock;
    TarMember member{std::move(name), data_at, size, name_headers};
    if (content_) {
      auto digest = content_digest(size, *content_, [&](std::uint64_t at, std::uint64_t most) {
        return data_bytes(data_at + at, most, next, member.name);
      });
      if (!digest.ok()) return digest.status();
      member.content = *digest;
    }
    if (Status s = visit_(std::move(member)); !s.ok()) return s;
    return next;
  }

  // Bytes of a member's data from `at` on (at least one, at most `most`), through the
  // window. Where the window does not hold `at`, it is read from there: a whole window
  // where headers are near, else on to the next entry's header at `next` and its data's
  // first window, so that they come with this read.
  Result<std::span<const std::byte>> data_bytes(std::uint64_t at, std::uint64_t most, std::uint64_t next,
                                                std::string_view name) {
    if (at < window_at_ || at >= window_at_ + window_.size()) {
      // Where headers are near (small members), a whole window ahead, as read_header reads
      // one; else the next header and its data's first window.
      const std::uint64_t through =
          next - at <= kNearHeaders ? at + kWindowBytes : next + tar::kBlock + kContentWindowBytes;
      const std::uint64_t bytes = std::min(
          file_size_ - at, through - at <= kWindowBytes ? through - at : std::min(most, kMaxPieceBytes));
      const std::string what = "the data of member " + quoted_name(name);
      window_.resize(bytes);
      window_at_ = at;
      Status s = read_exact(at, window_.data(), window_.size(), what);
      if (!s.ok() && bytes > most) {  // what lies past the member may be where a read fails
        window_.resize(most);
        s = read_exact(at, window_.data(), window_.size(), what);
      }
      if (!s.ok()) {
        window_.clear();
        return s;
      }
    }
    const std::uint64_t held = window_at_ + window_.size() - at;
    return std::as_bytes(std::span(window_.data() + (at - window_at_), std::min(most, held)));
  }

  Result<std::string> read_extended(std::uint64_t header_at, std::uint64_t data_at, std::uint64_t size,
                                    char type) const {
    const std::string_view kind = extended_kind(type);
    if (size > kMaxExtendedBytes) {
      return Status::BadData(shard_ + ": the " + std::string(kind) + " at offset " +
                             std::to_string(header_at) + " is " + std::to_string(size) + " bytes, over the " +
                             std::to_string(kMaxExtendedBytes) +
                             " this reader accepts; the header is corrupt" + std::string(kReCopy));
    }
    std::string data(static_cast<std::size_t>(size), '\0');
    if (Status s = read_exact(data_at, data.data(), data.size(), "the " + std::string(kind)); !s.ok()) {
      return s;
    }
    return data;
  }

  // Records "<length> <key>=<value>\n", the length counting the whole record. From an
  // 'x' header, `path` and `size` apply to the next entry (an empty value cancels the
  // key); a global 'g' header is only checked: a `path` there names no member, and the
  // other keys (times, owners, charsets) do not bear on where a member's bytes are.
  Status apply_pax(std::string_view records, bool global, std::uint64_t header_at) {
    for (int record = 1; !records.empty(); ++record) {
      const auto malformed = [&](std::string_view why) {
        return Status::BadData(shard_ + " has a malformed pax header at offset " + std::to_string(header_at) +
                               " (record " + std::to_string(record) + ": " + std::string(why) + ")" +
                               after_previous() + std::string(kReCopy));
      };
      const std::size_t space = records.find(' ');
      if (space == std::string_view::npos) return malformed("no length");
      const std::optional<std::uint64_t> length = decimal(records.substr(0, space));
      if (!length)
        return malformed("the length " + quoted_name(records.substr(0, space)) + " is not a number");
      if (*length > records.size()) return malformed("its length runs past the header's data");
      if (*length < space + 3) return malformed("its length is too short for a record");
      const std::string_view line = records.substr(space + 1, *length - space - 1);
      if (line.back() != '\n') return malformed("it does not end with a newline");
      const std::size_t equals = line.find('=');
      if (equals == std::string_view::npos || equals == 0) return malformed("no key=value");
      const std::string_view key = line.substr(0, equals);
      const std::string_view value = line.substr(equals + 1, line.size() - equals - 2);
      records.remove_prefix(*length);
      if (global) continue;
      if (key == "path") {
        next_name_ = value.empty() ? std::nullopt : std::optional<std::string>(value);
      } else if (key == "size") {
        if (value.empty()) {
          next_size_.reset();
          continue;
        }
        next_size_ = decimal(value);
        if (!next_size_) return malformed("size " + quoted_name(value) + " is not a decimal number");
      }
    }
    return Status::Ok();
  }

  const int fd_;
  const std::string shard_;  // printable
  const std::uint64_t file_size_;
  const std::function<Status(TarMember&&)>& visit_;
  // What extended headers said of the next entry.
  std::optional<std::string> next_name_;
  std::optional<std::uint64_t> next_size_;
  std::optional<std::uint64_t> chain_start_;  // the first extended header since the last entry
  std::string previous_;                      // the last entry's name, to place an error after
  const std::span<const unsigned char> memory_;
  const bool in_memory_ = false;
  const std::optional<ContentCheck> content_;  // the members' digests are read so
  // Headers come through a window of the file: one pread of up to kWindowBytes where the
  // headers are near each other (small members: dozens of headers a read), one of a
  // single block where they are not (reading ahead would read only data).
  static constexpr std::uint64_t kWindowBytes = 64 * 1024, kNearHeaders = 8 * 1024;
  // What one read of a large member's data takes at most, under content_check=full.
  static constexpr std::uint64_t kMaxPieceBytes = std::uint64_t{1} << 20;
  std::vector<unsigned char> window_;
  std::uint64_t window_at_ = 0;
  std::uint64_t last_header_at_ = 0;
};

}  // namespace

Status scan_tar(int fd, std::string_view shard, std::uint64_t file_size,
                const std::function<Status(TarMember&&)>& member, std::optional<ContentCheck> content) {
  return TarScanner(fd, shard, file_size, member, content).run();
}

Result<std::string> member_name_in(std::span<const std::byte> headers, std::string_view shard) {
  std::optional<TarMember> found;
  const std::function<Status(TarMember &&)> visit = [&](TarMember&& m) {
    found = std::move(m);
    return Status::Cancelled("the member is found");
  };
  const std::span<const unsigned char> bytes(reinterpret_cast<const unsigned char*>(headers.data()),
                                             headers.size());
  const Status s = TarScanner(bytes, shard, visit).run();
  if (found && found->offset == headers.size()) return std::move(found->name);
  if (!found && !s.ok()) return s;
  return Status::BadData(printable(shard) + ": the " + std::to_string(headers.size()) +
                         " bytes of tar headers before a member's data are not that member's headers; the "
                         "shard changed or its index is damaged: open the dataset again");
}

Result<std::vector<TarMember>> scan_tar_file(const std::string& path) {
  Result<RegularFile> file = open_regular_file(
      path, "tar shard", SizeLimit{std::numeric_limits<std::uint64_t>::max(), "the limit", ""});
  if (!file.ok()) return file.status();
  std::vector<TarMember> members;
  Status s = scan_tar(file->fd.get(), path, file->size, [&](TarMember&& m) {
    members.push_back(std::move(m));
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return members;
}

}  // namespace forkfeed
