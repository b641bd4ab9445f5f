// mark_files(): a file's size and content digest, from the content cache where its stamp
// is unchanged, else read; on up to kMaxMarkThreads threads.
#include "dataset/file_marks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/file_stamp.h"
#include "base/logging.h"
#include "base/on_threads.h"
#include "base/unique_fd.h"
#include "formats/content_digest.h"

namespace forkfeed {
namespace {

// From the page cache a file costs a few microseconds (open, fstat, pread, close; a stat
// where the cache answers), so the threads are the cores; on a network file system, where
// each open waits on the server, more would help, but the shards' scan holds to the same bound.
constexpr unsigned kMaxMarkThreads = 8;
// Files a thread takes at once, so that the shared counter is not every file's.
constexpr std::size_t kFilesATurn = 64;

using Entry = ContentCache::Entry;

// The entries of the last open, found by path: where the file's place is the same (the
// list did not change), or by a lookup.
class Cached {
 public:
  explicit Cached(std::vector<Entry> entries) : entries_(std::move(entries)) {}
  const Entry* find(std::size_t f, std::uint64_t path) const {
    if (f < entries_.size() && entries_[f].path == path) return &entries_[f];
    std::call_once(indexed_, [this] {
      for (std::size_t i = 0; i < entries_.size(); ++i) by_path_.emplace(entries_[i].path, i);
    });
    const auto it = by_path_.find(path);
    return it == by_path_.end() ? nullptr : &entries_[it->second];
  }
  bool empty() const { return entries_.empty(); }

 private:
  const std::vector<Entry> entries_;
  mutable std::once_flag indexed_;
  mutable std::unordered_map<std::uint64_t, std::size_t> by_path_;
};

// Reads file `path`'s size and content digest as `check` says into `entry` (its stamp
// too); `cached`, what the last open read of it, answers where the stamp is unchanged.
// The entry's content stays 0 when it could not be read.
void mark_one(const std::string& path, ContentCheck check, const Entry* cached, std::string& buffer,
              Entry& entry) {
  struct stat st {};
  if (cached != nullptr && cached->content != 0 && ::stat(path.c_str(), &st) == 0 &&
      stamp_of(st) == cached->stamp) {
    entry = *cached;
    return;
  }
  // O_NONBLOCK: a FIFO named like an image must not hang the open.
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) {  // unreadable now (no permission, an I/O error): its size, if it has one
    if (::stat(path.c_str(), &st) == 0) entry.stamp = stamp_of(st);
    return;
  }
  if (::fstat(fd.get(), &st) != 0) return;
  entry.stamp = stamp_of(st);
  if (!S_ISREG(st.st_mode)) return;
  const ReadPiece read = [&](std::uint64_t at, std::uint64_t most) -> Result<std::span<const std::byte>> {
    buffer.resize(static_cast<std::size_t>(std::min<std::uint64_t>(most, std::uint64_t{1} << 20)));
    ssize_t n;
    do {
      n = ::pread(fd.get(), buffer.data(), buffer.size(), static_cast<off_t>(at));
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return Status::IoError("");  // shorter than fstat said, or unreadable: unknown
    return std::as_bytes(std::span(buffer.data(), static_cast<std::size_t>(n)));
  };
  const Result<std::uint64_t> digest = content_digest(entry.stamp.size, check, read);
  if (digest.ok()) entry.content = std::max<std::uint64_t>(*digest, 1);  // 0 is "not read"
}

}  // namespace

std::uint64_t mark_files(DatasetIndexBuilder& builder, ContentCheck check, const ContentCache* cache) {
  builder.set_content_check(check);
  const std::size_t n = builder.file_count();
  const Cached cached(cache != nullptr ? cache->load() : std::vector<Entry>{});
  std::vector<Entry> entries(n);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    std::string path, buffer;
    try {
      for (std::size_t first; (first = next.fetch_add(kFilesATurn)) < n;) {
        for (std::size_t f = first; f < std::min(n, first + kFilesATurn); ++f) {
          path.assign(builder.file(f));
          entries[f].path = ContentCache::path_digest(path);
          mark_one(path, check, cached.find(f, entries[f].path), buffer, entries[f]);
        }
      }
    } catch (const std::bad_alloc&) {
      // Files left unmarked are unknown, and read (or refused) as any unreadable file.
    }
  };
  on_threads(std::min<std::size_t>(n / kFilesATurn + 1, kMaxMarkThreads), work);
  std::uint64_t unread = 0;
  for (std::size_t f = 0; f < n; ++f) {
    const Entry& e = entries[f];
    unread += e.content == 0 ? 1 : 0;
    // A file that could not be stat'ed either is kUnknownBytes: bad data when read.
    if (e.stamp.inode != 0 || e.stamp.device != 0) builder.mark(f, e.stamp.size, e.content);
  }
  if (unread > 0) {
    loader_logger()->warn(
        "{} of {} files could not be read while indexing (absent, unreadable or failing now): they are bad "
        "data "
        "when read, and the dataset's identity leaves the files' contents out (a state or a fan-in compares "
        "their names, labels and sizes)",
        unread, n);
  }
  bool changed = cached.empty();
  for (std::size_t f = 0; f < n && !changed; ++f) {
    const Entry* was = cached.find(f, entries[f].path);
    changed = was == nullptr || !(*was == entries[f]);
  }
  if (cache != nullptr && changed) {
    (void)cache->store(entries);  // a cache that cannot be written costs the next open its reads
  }
  return unread;
}

}  // namespace forkfeed
