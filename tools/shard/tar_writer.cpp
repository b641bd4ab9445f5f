// Writing a shard: each member is one writev of its headers, data and padding; the
// archive becomes visible under its name only once finish() has committed it.
#include "tools/shard/tar_writer.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "base/printable.h"
#include "formats/tar_format.h"

namespace forkfeed {
namespace {

using Header = std::array<char, tar::kBlock>;

constexpr std::string_view kWhat = "tar shard";
constexpr std::size_t kRecord = 20 * tar::kBlock;  // GNU tar's default blocking factor
// The largest size 11 octal digits hold; larger ones go in a pax `size` record.
constexpr std::uint64_t kMaxOctalSize = (std::uint64_t{1} << 33) - 1;
constexpr std::string_view kPaxName = "././@PaxHeader";  // as Python's tarfile names it
const std::array<char, kRecord> kZeros{};

void put_text(Header& h, tar::Field field, std::string_view text) {
  std::copy_n(text.data(), std::min(text.size(), field.size), h.data() + field.at);  // "" may have no data()
}

// `value` in size-1 octal digits and a NUL. REQUIRES: it fits.
void put_octal(Header& h, tar::Field field, std::uint64_t value) {
  for (std::size_t i = field.size - 1; i-- > 0; value >>= 3)
    h[field.at + i] = static_cast<char>('0' + (value & 7));
  h[field.at + field.size - 1] = '\0';
}

// A POSIX ustar header; every field not named here is fixed, so output is deterministic.
Header ustar_header(std::string_view name, std::string_view prefix, std::uint64_t size, char type) {
  Header h{};
  put_text(h, tar::kName, name);
  put_octal(h, tar::kMode, 0644);
  put_octal(h, tar::kUid, 0);
  put_octal(h, tar::kGid, 0);
  put_octal(h, tar::kSize, size);
  put_octal(h, tar::kMtime, 0);
  h[tar::kTypeflag.at] = type;
  std::memcpy(h.data() + tar::kMagic.at,
              "ustar\0"
              "00",
              tar::kMagic.size + tar::kVersion.size);
  put_octal(h, tar::kDevMajor, 0);
  put_octal(h, tar::kDevMinor, 0);
  put_text(h, tar::kPrefix, prefix);
  const tar::Checksums sums = tar::header_checksums(
      std::span<const unsigned char, tar::kBlock>(reinterpret_cast<unsigned char*>(h.data()), tar::kBlock));
  put_octal(h, tar::Field{tar::kChecksum.at, 7}, static_cast<std::uint64_t>(sums.as_unsigned));
  h[tar::kChecksum.at + 7] = ' ';  // "%06o\0 ", as GNU tar writes it
  return h;
}

// "<length> <key>=<value>\n", the length counting its own digits.
std::string pax_record(std::string_view key, std::string_view value) {
  const std::size_t base = key.size() + value.size() + 3;  // ' ', '=', '\n'
  std::size_t length = base + 1;
  while (length != base + std::to_string(length).size()) length = base + std::to_string(length).size();
  return std::to_string(length) + " " + std::string(key) + "=" + std::string(value) + "\n";
}

// The '/' at which `name` splits into a ustar prefix (<= 155 bytes) and name (<= 100,
// not empty), choosing the longest name part; npos when there is none.
std::size_t ustar_split(std::string_view name) {
  const std::size_t first = name.size() > tar::kName.size + 1 ? name.size() - tar::kName.size - 1 : 1;
  const std::size_t last = std::min(tar::kPrefix.size, name.size() - 2);
  for (std::size_t i = first; i <= last; ++i) {
    if (name[i] == '/') return i;
  }
  return std::string_view::npos;
}

std::string_view zeros(std::size_t bytes) { return {kZeros.data(), bytes}; }
std::size_t padding_of(std::uint64_t bytes) { return static_cast<std::size_t>(-bytes % tar::kBlock); }

}  // namespace

Result<TarWriter> TarWriter::create(const std::string& path) {
  auto file = AtomicFile::create(path, kWhat);
  if (!file.ok()) return file.status();
  return TarWriter(path, std::move(*file));
}

Status TarWriter::write_all(std::span<const std::string_view> pieces) {
  std::vector<iovec> iov;
  for (std::string_view piece : pieces) {
    if (!piece.empty()) iov.push_back({const_cast<char*>(piece.data()), piece.size()});
  }
  std::size_t first = 0;
  while (first < iov.size()) {
    const ssize_t n = ::writev(file_->fd(), iov.data() + first, static_cast<int>(iov.size() - first));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      failed_ = Status::FromErrno("cannot write " + std::string(kWhat) + " " + printable(file_->temp_path()),
                                  errno);
      file_.reset();
      return failed_;
    }
    written_ += static_cast<std::uint64_t>(n);
    for (std::size_t done = static_cast<std::size_t>(n); done > 0;) {
      const std::size_t step = std::min(done, iov[first].iov_len);
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + step;
      iov[first].iov_len -= step;
      done -= step;
      if (iov[first].iov_len == 0) ++first;
    }
  }
  return Status::Ok();
}

Status TarWriter::add(std::string_view name, std::span<const std::byte> data) {
  if (!failed_.ok()) return failed_;
  if (!file_) {
    return Status::InvalidArgument("cannot add " + printable(name) + " to " + std::string(kWhat) + " " +
                                   printable(path_) + ": it is finished");
  }
  if (name.empty() || name.find('\0') != std::string_view::npos || name.back() == '/') {
    return Status::InvalidArgument("cannot add " + std::string(kWhat) + " member '" + printable(name) +
                                   "' to " + printable(path_) +
                                   ": a member name must be non-empty, hold no NUL and not end in '/'");
  }
  std::string_view stored_name = name, prefix;
  std::string records;
  if (name.size() > tar::kName.size) {
    if (const std::size_t split = ustar_split(name); split != std::string_view::npos) {
      prefix = name.substr(0, split);
      stored_name = name.substr(split + 1);
    } else {
      records += pax_record("path", name);
      stored_name = name.substr(0, tar::kName.size);  // for readers that know no pax
    }
  }
  const bool big = data.size() > kMaxOctalSize;
  if (big) records += pax_record("size", std::to_string(data.size()));
  Header pax_header{};
  if (!records.empty()) pax_header = ustar_header(kPaxName, "", records.size(), 'x');
  const Header header = ustar_header(stored_name, prefix, big ? 0 : data.size(), '0');
  const std::array<std::string_view, 6> pieces = {
      records.empty() ? std::string_view() : std::string_view(pax_header.data(), pax_header.size()),
      records,
      zeros(padding_of(records.size())),
      std::string_view(header.data(), header.size()),
      std::string_view(reinterpret_cast<const char*>(data.data()), data.size()),
      zeros(padding_of(data.size())),
  };
  return write_all(pieces);
}

Status TarWriter::finish() {
  if (!failed_.ok()) return failed_;
  if (!file_)
    return Status::InvalidArgument(std::string(kWhat) + " " + printable(path_) + " is finished already");
  const std::uint64_t end = written_ + 2 * tar::kBlock;
  const std::size_t record_padding = static_cast<std::size_t>((kRecord - end % kRecord) % kRecord);
  const std::array<std::string_view, 2> tail = {zeros(2 * tar::kBlock), zeros(record_padding)};
  if (Status s = write_all(tail); !s.ok()) return s;
  Status s = file_->commit();
  file_.reset();
  if (!s.ok()) failed_ = s;
  return s;
}

}  // namespace forkfeed
