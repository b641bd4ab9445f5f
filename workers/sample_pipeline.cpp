// SamplePipeline: read with pread into a reused buffer, decode, transform into the slot.
#include "workers/sample_pipeline.h"

#include <unistd.h>

#include <cerrno>
#include <string>

#include "transport/printable.h"
#include "transport/regular_file.h"

namespace forkfeed {

Status SamplePipeline::read_file(const std::string& path) {
  // Refused before a byte is read: a FIFO named x.jpg, or a file the worker would have to
  // hold whole that is larger than any image (on_error decides what the batch does).
  const SizeLimit limit{spec_.max_file_bytes, "max_file_bytes",
                        "raise LoaderOptions::max_file_bytes (forkfeed-bench --max-file-bytes) or leave the file "
                        "out of the dataset"};
  Result<RegularFile> file = open_regular_file(path, "", limit);  // errors say why, callers say which file
  if (!file.ok()) {
    const Status& s = file.status();
    return s.code() == Status::Code::kInvalidArgument ? Status::BadData(s.message()) : s;
  }
  const UniqueFd& fd = file->fd;
  const auto want = static_cast<std::size_t>(file->size);
  // The buffer grows to the largest file, but one outsized file (up to max_file_bytes)
  // must not stay held by every worker for the whole run: past kKeptFileBytes it is
  // given back as soon as a typical file comes.
  constexpr std::size_t kKeptFileBytes = std::size_t{16} << 20;
  if (file_.size() > kKeptFileBytes && want <= kKeptFileBytes) std::vector<std::byte>().swap(file_);
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

Status SamplePipeline::decode_fused(FileBytes file, KeyedRng& rng, std::byte* out) {
  auto choice = decoders_.choose(file, spec_.max_pixels);
  if (!choice.ok()) return choice.status();
  auto [decoder, size] = *choice;
  const bool whole = size.width == 0;  // the header does not say: decode first, plan after
  if (whole) {
    if (Status s = decoders_.decode(file, spec_.max_pixels, pixels_); !s.ok()) return s;
    size = {pixels_.cols, pixels_.rows};
  }
  auto window = transform_.plan(size.width, size.height, rng);
  if (!window.ok()) return window.status();
  cv::Mat region;
  if (whole) {
    region = pixels_(pixel_rect(window->source, 1.0, {0, 0}, pixels_.size()));
  } else if (Status s =
                 decoder->decode_region(file, window->source, static_cast<int>(spec_.size), pixels_, region);
             !s.ok()) {
    return s;
  }
  transform_.write(region, window->flip, out);
  return Status::Ok();
}

Status SamplePipeline::decode_reference(FileBytes file, KeyedRng& rng, std::byte* out) {
  if (Status s = decoders_.decode(file, spec_.max_pixels, pixels_); !s.ok()) return s;
  return transform_.apply(pixels_, rng, out);
}

Status SamplePipeline::run(std::string_view path_view, std::uint64_t epoch, std::uint64_t index,
                           std::byte* out) {
  const std::string path(path_view);
  // Its errors name the file.
  Status s = read_file(path);
  if (!s.ok()) return s;
  KeyedRng rng({spec_.seed, epoch, index});
  const FileBytes file(file_.data(), file_size_);
  // OpenCV reports failures (including allocation) by throwing; none may escape a worker.
  try {
    s = path_ == DecodePath::kFused ? decode_fused(file, rng, out) : decode_reference(file, rng, out);
  } catch (const std::exception& e) {
    s = Status::BadData("cannot decode or transform image: " + printable(e.what()));
  }
  return s;
}

}  // namespace forkfeed
