// Writes a synthetic dataset in ImageFolder layout: checks the spec, picks each image's
// format and file name, and runs the image writers on a few threads (image_file.h).
#include "tools/mkdata/synthetic_images.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <opencv2/core.hpp>

#include "tools/mkdata/image_file.h"
#include "tools/mkdata/splitmix64.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;
using mkdata::ImageFormat;

// Large enough for any test or benchmark; small enough that sides fit an int with the
// 4:3 aspect applied, and that JPEG's 65535-pixel limit is far away.
constexpr std::uint32_t kMaxSide = 16384;

// The three rare formats take one position each in every block of `every` images (every
// image when every <= 3; none when every is 0). Block 0 uses positions 1..3, so even a handful of images
// holds each kind while image 0 stays a plain JPEG; later blocks shift the positions by a hash of the block
// number, so that no class, with round-robin classes, collects one format.
ImageFormat format_of(std::uint32_t index, std::uint32_t every) {
  if (every == 0) return ImageFormat::kBaselineJpeg;
  constexpr ImageFormat kRare[] = {ImageFormat::kGrayJpeg, ImageFormat::kProgressiveJpeg, ImageFormat::kPng};
  const std::uint64_t n = std::max<std::uint32_t>(every, 3);
  const std::uint64_t block = index / n;
  const std::uint64_t shift = block == 0 ? 0 : mkdata::splitmix64(block) % n;
  const std::uint64_t rank = (index % n + 2 * n - 1 - shift) % n;  // 0 at position 1 + shift
  return rank < 3 ? kRare[rank] : ImageFormat::kBaselineJpeg;
}

std::string zero_padded(std::uint32_t value, int width) {
  std::string digits = std::to_string(value);
  if (static_cast<int>(digits.size()) < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

int digits_for(std::uint32_t count) {  // digits of the largest index, count - 1
  return static_cast<int>(std::to_string(count > 0 ? count - 1 : 0).size());
}

Status validate(const SyntheticDatasetSpec& spec) {
  auto invalid = [](const std::string& msg) { return Status::InvalidArgument("synthetic dataset: " + msg); };
  if (spec.out.empty()) return invalid("no output folder given; set out to the dataset root");
  if (spec.images == 0) return invalid("images is 0; ask for at least one image");
  if (spec.classes == 0) return invalid("classes is 0; ask for at least one class");
  if (spec.classes > spec.images) {
    return invalid("classes " + std::to_string(spec.classes) + " > images " + std::to_string(spec.images) +
                   ": every class needs at least one image; ask for fewer classes or more images");
  }
  if (spec.min_side < 8) {
    return invalid("min_side " + std::to_string(spec.min_side) + " is below 8 pixels; use 8 or more");
  }
  if (spec.min_side > spec.max_side) {
    return invalid("min_side " + std::to_string(spec.min_side) + " > max_side " +
                   std::to_string(spec.max_side) + "; the shorter side is drawn from [min_side, max_side]");
  }
  if (spec.max_side > kMaxSide) {
    return invalid("max_side " + std::to_string(spec.max_side) + " is above " + std::to_string(kMaxSide) +
                   " pixels; use a smaller max_side");
  }
  return Status::Ok();
}

// OpenCV's parallel backend (TBB in common builds) starts worker threads on first use and
// keeps them for the life of the process. A test that makes a dataset and then starts a
// loader would count as multithreaded and trip ForkSafety, and TBB itself does not survive
// fork. So OpenCV runs sequentially while we write; we parallelise over images instead.
// Not safe against another thread changing cv::setNumThreads at the same time.
class SequentialOpenCv {
 public:
  SequentialOpenCv() : saved_(cv::getNumThreads()) { cv::setNumThreads(0); }
  ~SequentialOpenCv() { cv::setNumThreads(saved_); }  // starts no thread by itself
  SequentialOpenCv(const SequentialOpenCv&) = delete;
  SequentialOpenCv& operator=(const SequentialOpenCv&) = delete;

 private:
  int saved_;
};

// One thread per usable CPU, but no more than keeps the images in flight under ~2 GiB:
// a thread holds about 32 bytes a pixel (float canvas, layers, the 8-bit copy, the file).
unsigned writer_threads(const SyntheticDatasetSpec& spec) {
  cpu_set_t set;
  const unsigned cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? static_cast<unsigned>(CPU_COUNT(&set))
                                                                     : std::thread::hardware_concurrency();
  const double largest_image = spec.max_side * (spec.max_side * 4.0 / 3.0) * 32;
  const double fit = std::floor(2.0 * (1ull << 30) / largest_image);
  return static_cast<unsigned>(std::clamp(fit, 1.0, static_cast<double>(std::max(1u, cpus))));
}

// Runs job(0 .. count-1) on up to `threads` threads, all joined before it returns, so the
// caller is single-threaded again. `progress` is called on the calling thread with 1, 2, ...
// as jobs succeed. After a failure no new job starts; the failure with the lowest index is
// returned, so the message does not depend on timing.
Status run_jobs(std::uint32_t count, unsigned threads, const std::function<Status(std::uint32_t)>& job,
                const std::function<void(std::uint32_t)>& progress) {
  std::mutex mutex;
  std::condition_variable changed;
  std::uint32_t started = 0, finished = 0, succeeded = 0;
  std::uint32_t failed_index = count;
  Status failure;
  auto work = [&] {
    for (;;) {
      std::uint32_t index;
      {
        std::lock_guard lock(mutex);
        if (failed_index < count || started == count) return;
        index = started++;
      }
      Status status = job(index);
      {
        std::lock_guard lock(mutex);
        ++finished;
        if (status.ok()) {
          ++succeeded;
        } else if (index < failed_index) {
          failed_index = index;
          failure = std::move(status);
        }
      }
      changed.notify_one();
    }
  };

  std::vector<std::jthread> workers;
  for (unsigned t = 0; t < std::min<unsigned>(threads, count); ++t) workers.emplace_back(work);
  std::uint32_t reported = 0;
  std::unique_lock lock(mutex);
  for (;;) {
    const auto all_done = [&] { return finished == started && (failed_index < count || started == count); };
    changed.wait(lock, [&] { return succeeded > reported || all_done(); });
    while (progress && reported < succeeded && failed_index == count) {
      const std::uint32_t n = ++reported;
      lock.unlock();  // workers keep going while the caller prints
      progress(n);
      lock.lock();
    }
    reported = std::max(reported, succeeded);
    if (all_done()) break;
  }
  lock.unlock();
  workers.clear();  // joins
  return failed_index < count ? failure : Status::Ok();
}

}  // namespace

Status write_synthetic_dataset(const SyntheticDatasetSpec& spec,
                               const std::function<void(std::uint32_t)>& progress) {
  if (Status s = validate(spec); !s.ok()) return s;

  // Zero padding keeps lexical order equal to numeric order, which is how ImageFolder
  // assigns labels and lists files.
  const int class_width = std::max(3, digits_for(spec.classes));
  const int image_width = std::max(5, digits_for(spec.images));
  std::vector<fs::path> class_dirs;
  class_dirs.reserve(spec.classes);
  for (std::uint32_t c = 0; c < spec.classes; ++c) {
    fs::path dir = fs::path(spec.out) / ("class_" + zero_padded(c, class_width));
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      return Status::IoError("cannot create folder " + dir.string() + ": " + ec.message() + "; check that " +
                             spec.out + " is a writable folder");
    }
    class_dirs.push_back(std::move(dir));
  }

  auto write_one = [&](std::uint32_t i) {
    const ImageFormat format = format_of(i, spec.special_every);
    // Round-robin: class sizes differ by at most one.
    const fs::path path = class_dirs[i % spec.classes] / ("img_" + zero_padded(i, image_width) +
                                                          (format == ImageFormat::kPng ? ".png" : ".jpg"));
    return mkdata::write_image(spec, i, path, format);
  };
  const SequentialOpenCv sequential;
  return run_jobs(spec.images, writer_threads(spec), write_one, progress);
}

}  // namespace forkfeed
