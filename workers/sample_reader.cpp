// SampleReader: whole files through regular_file's checks, slices by pread on kept fds.
#include "workers/sample_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/file_stamp.h"
#include "base/regular_file.h"

namespace forkfeed {
namespace {

// The buffer grows to the largest sample, but one outsized file (up to max_file_bytes)
// must not stay held by every worker for the whole run: past this it is given back as
// soon as a typical sample comes.
constexpr std::size_t kKeptBufferBytes = std::size_t{16} << 20;

// Errors that are a file's own: it is missing, we may not read it, its name cannot be
// followed, or it is no file to read. Any other errno (out of fds or memory, EIO, a
// network file system that timed out, one not known here) says nothing about the file.
bool file_fault(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case ELOOP:
    case ENAMETOOLONG:
    case EISDIR:
    case ENXIO:
    case ENODEV:
    case EOVERFLOW:
    case EFBIG: return true;
    default: return false;
  }
}

// A sample file's own fault is bad data, which on_error decides: missing, unreadable, not
// a regular file (InvalidArgument), over max_file_bytes (InvalidArgument). Any other
// failure keeps its code: the batch fails, and a good sample is never skipped.
Status classify_file_error(const Status& s) {
  const bool own =
      s.code() == Status::Code::kInvalidArgument || (s.os_error() != 0 && file_fault(s.os_error()));
  return own ? Status::BadData(s.message()) : s;
}

// A shard that was indexed and cannot be read as it was is no sample's fault: the
// dataset changed under the loader. A failure of the machine keeps its code.
Status classify_shard_error(const Status& s) {
  const bool changed =
      s.code() == Status::Code::kInvalidArgument || (s.os_error() != 0 && file_fault(s.os_error()));
  return changed ? Status::FailedPrecondition("the shard cannot be read as it was indexed: " + s.message() +
                                              "; the dataset changed under the loader: open it again")
                 : s;
}

}  // namespace

Result<FileBytes> SampleReader::read(const SampleSource& source, std::uint64_t before) {
  if (!source.sliced) {
    if (Status s = read_file(std::string(source.file)); !s.ok()) return classify_file_error(s);
    return FileBytes(buffer_.data(), size_);
  }
  if (source.size > max_file_bytes_) {
    return Status::BadData(
        "the sample is " + std::to_string(source.size) + " bytes > max_file_bytes " +
        std::to_string(max_file_bytes_) +
        ": raise LoaderOptions::max_file_bytes (forkfeed-bench --max-file-bytes) or leave it "
        "out of the shard");
  }
  auto open = shard(source.file);
  if (!open.ok()) return classify_shard_error(open.status());
  const int fd = (*open)->fd.get();
  if (before > source.offset) {
    return Status::Internal("the " + std::to_string(before) + " bytes before offset " +
                            std::to_string(source.offset) + " lie before the shard's start");
  }
  if (Status s = read_at(fd, source.offset - before, static_cast<std::size_t>(before + source.size)); !s.ok())
    return classify_shard_error(s);
  // After the read: a stamp unchanged now was unchanged while the bytes were read (a
  // write changes the change time), so they are the indexed ones.
  auto now = stamp_file(fd);
  if (!now.ok()) return now.status();
  if (*now != source.stamp) {
    return Status::FailedPrecondition(
        "the shard changed since it was indexed: " + stamp_change(source.stamp, *now) +
        "; its samples may lie elsewhere now and carry other labels, so none is read from it: open the "
        "loader again to index it anew (a state() taken before resumes only if the shard is as it was)");
  }
  if (size_ < before + source.size) {
    return Status::BadData("the shard ends before this sample's " + std::to_string(source.size) +
                           " bytes at offset " + std::to_string(source.offset) + " (it is " +
                           std::to_string(now->size) + " bytes)");
  }
  return FileBytes(buffer_.data(), size_);
}

Status SampleReader::read_file(const std::string& path) {
  // Refused before a byte is read: a FIFO named x.jpg, or a file the worker would have to
  // hold whole that is larger than any image (on_error decides what the batch does).
  const SizeLimit limit{
      max_file_bytes_, "max_file_bytes",
      "raise LoaderOptions::max_file_bytes (forkfeed-bench --max-file-bytes) or leave the file "
      "out of the dataset"};
  Result<RegularFile> file = open_regular_file(path, "", limit);  // errors say why, callers say which file
  if (!file.ok()) return file.status();
  return read_at(file->fd.get(), 0, static_cast<std::size_t>(file->size));
}

Result<const SampleReader::OpenShard*> SampleReader::shard(std::string_view path) {
  ++uses_;
  auto it = std::find_if(shards_.begin(), shards_.end(), [&](const OpenShard& s) { return s.path == path; });
  if (it != shards_.end()) {
    it->last_use = uses_;
    return &*it;
  }
  const SizeLimit any{~std::uint64_t{0}, "the limit", ""};
  Result<RegularFile> file = open_regular_file(std::string(path), "", any);
  if (!file.ok()) return file.status();
  if (shards_.size() == kOpenShards) {  // close the least recently used
    shards_.erase(
        std::min_element(shards_.begin(), shards_.end(),
                         [](const OpenShard& a, const OpenShard& b) { return a.last_use < b.last_use; }));
  }
  shards_.push_back(OpenShard{std::string(path), std::move(file->fd), uses_});
  return &shards_.back();
}

Status SampleReader::read_at(int fd, std::uint64_t offset, std::size_t size) {
  if (buffer_.size() > kKeptBufferBytes && size <= kKeptBufferBytes) std::vector<std::byte>().swap(buffer_);
  if (buffer_.size() < size) buffer_.resize(size);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, buffer_.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("cannot read", errno);
    if (n == 0) break;  // the file ended (or shrank since fstat)
    done += static_cast<std::size_t>(n);
  }
  size_ = done;
  return Status::Ok();
}

}  // namespace forkfeed
