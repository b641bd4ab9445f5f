// SamplePipeline: read with pread into a reused buffer, decode, transform into the slot.
#include "workers/sample_pipeline.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "transport/unique_fd.h"

namespace forkfeed {

Status SamplePipeline::read_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  // O_NONBLOCK: a FIFO in the dataset must be refused below, not wait for a writer.
  if (!fd.valid()) return Status::FromErrno("cannot open", errno);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno("cannot stat", errno);
  if (!S_ISREG(st.st_mode)) return Status::BadData("not a regular file");
  const auto want = static_cast<std::size_t>(st.st_size);
  if (file_.size() < want) file_.resize(want);
  std::size_t done = 0;
  while (done < want) {
    const ssize_t n = ::pread(fd.get(), file_.data() + done, want - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("cannot read", errno);
    if (n == 0) break;  // the file shrank since fstat
    done += static_cast<std::size_t>(n);
  }
  file_size_ = done;
  return Status::Ok();
}

Status SamplePipeline::run(std::string_view path_view, std::uint64_t epoch, std::uint64_t index, std::byte* out) {
  const std::string path(path_view);
  Status s = read_file(path);
  try {
    if (s.ok()) s = decoders_.decode(FileBytes(file_.data(), file_size_), spec_.max_pixels, rgb_);
  } catch (const std::exception& e) {
    s = Status::BadData(std::string("cannot decode image: ") + e.what());
  }
  if (!s.ok()) return s.about(path);
  KeyedRng rng({spec_.seed, epoch, index});
  // OpenCV reports failures (including allocation) by throwing; none may escape a worker.
  try {
    if (s = transform_.apply(rgb_, rng, out); !s.ok()) return s.about(path);
  } catch (const std::exception& e) {
    return Status::BadData(std::string("cannot transform image: ") + e.what()).about(path);
  }
  return Status::Ok();
}

}  // namespace forkfeed
