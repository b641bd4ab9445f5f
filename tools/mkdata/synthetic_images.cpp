// Writes deterministic, photo-like synthetic images in ImageFolder layout. Each image is
// a pure function of (spec.seed, image number), so a dataset is rebuilt, never shipped.
#include "tools/mkdata/synthetic_images.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace forkfeed {
namespace {

namespace fs = std::filesystem;

// Large enough for any test or benchmark; small enough that sides fit an int with the
// 4:3 aspect applied, and that JPEG's 65535-pixel limit is far away.
constexpr std::uint32_t kMaxSide = 16384;

enum class Format { kBaselineJpeg, kGrayJpeg, kProgressiveJpeg, kPng };

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// One independent stream per image, so an image does not depend on the ones before it:
// growing a dataset keeps its first images, and any image can be regenerated alone.
// Draws must happen in a fixed order for byte-identical output on every compiler: never
// two draws as arguments of one call (unspecified order); braced lists are ordered.
cv::RNG image_rng(std::uint64_t seed, std::uint32_t index) {
  return cv::RNG(splitmix64(splitmix64(seed) ^ index));
}

// The three rare formats take one position each in every block of `every` images (every
// image when every <= 3). Block 0 uses positions 1..3, so even a handful of images holds
// each kind while image 0 stays a plain JPEG; later blocks shift the positions by a hash
// of the block number, so that no class, with round-robin classes, collects one format.
Format format_of(std::uint32_t index, std::uint32_t every) {
  constexpr Format kRare[] = {Format::kGrayJpeg, Format::kProgressiveJpeg, Format::kPng};
  const std::uint64_t n = std::max<std::uint32_t>(every, 3);
  const std::uint64_t block = index / n;
  const std::uint64_t shift = block == 0 ? 0 : splitmix64(block) % n;
  const std::uint64_t rank = (index % n + 2 * n - 1 - shift) % n;  // 0 at position 1 + shift
  return rank < 3 ? kRare[rank] : Format::kBaselineJpeg;
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
  if (spec.special_every == 0) {
    return invalid(
        "special_every is 0; use 1 or more (20 makes 3 images in 20 grayscale, "
        "progressive or PNG)");
  }
  return Status::Ok();
}

// Shorter side uniform in [min_side, max_side]; aspect between 1 and 4:3, either way up.
cv::Size image_size(cv::RNG& rng, const SyntheticDatasetSpec& spec) {
  const int short_side = rng.uniform(static_cast<int>(spec.min_side), static_cast<int>(spec.max_side) + 1);
  const double aspect = rng.uniform(1.0, 4.0 / 3.0);
  // floor keeps long/short <= 4/3 exactly.
  const int long_side = std::max(short_side, static_cast<int>(std::floor(short_side * aspect)));
  return rng.uniform(0, 2) == 0 ? cv::Size(long_side, short_side) : cv::Size(short_side, long_side);
}

cv::Vec3f random_colour(cv::RNG& rng) {
  return {rng.uniform(0.f, 255.f), rng.uniform(0.f, 255.f), rng.uniform(0.f, 255.f)};
}

// rows x cols colours between two random ones, each nudged by up to `jitter`: related
// colours, as in a photograph, rather than a rainbow.
cv::Mat3f colour_grid(cv::RNG& rng, int rows, int cols, float jitter) {
  const cv::Vec3f a = random_colour(rng);
  const cv::Vec3f b = random_colour(rng);
  cv::Mat3f grid(rows, cols);
  for (auto& cell : grid) {
    const float t = rng.uniform(0.f, 1.f);
    cell =
        a * (1.f - t) + b * t +
        cv::Vec3f{rng.uniform(-jitter, jitter), rng.uniform(-jitter, jitter), rng.uniform(-jitter, jitter)};
  }
  return grid;
}

// Smooth gradients (sky, walls, an out-of-focus background) with cloudy variation on top,
// built at 1/16 scale and upsampled once: a full-size cubic resize is the costly step, so
// both layers share it.
cv::Mat3f background(cv::RNG& rng, cv::Size size) {
  const int rows = rng.uniform(2, 5);
  const int cols = rng.uniform(2, 5);
  const cv::Mat3f grid = colour_grid(rng, rows, cols, 25.f);
  cv::Mat3f low;
  cv::resize(grid, low, cv::Size(std::max(2, size.width / 16), std::max(2, size.height / 16)), 0, 0,
             cv::INTER_CUBIC);
  // Clouds vary mostly in brightness, a little in hue, like light on real surfaces.
  const double strength = rng.uniform(4.0, 14.0);
  cv::Mat1f brightness(low.size());
  rng.fill(brightness, cv::RNG::NORMAL, 0, strength);
  cv::Mat3f clouds(low.size());
  rng.fill(clouds, cv::RNG::NORMAL, cv::Scalar::all(0), cv::Scalar::all(strength / 3));
  cv::Mat3f brightness3;
  cv::cvtColor(brightness, brightness3, cv::COLOR_GRAY2BGR);
  low += clouds + brightness3;
  // Upsampled white noise shows the grid as a plaid; a blur at low scale rounds it off.
  cv::GaussianBlur(low, low, cv::Size(3, 3), 0.8);
  cv::Mat3f field;
  cv::resize(low, field, size, 0, 0, cv::INTER_CUBIC);
  return field;
}

// Outline of a random circle/ellipse, rotated rectangle or star-ish polygon.
std::vector<cv::Point> random_shape(cv::RNG& rng, cv::Size size) {
  const int extent = std::min(size.width, size.height);
  const cv::Point centre{rng.uniform(0, size.width), rng.uniform(0, size.height)};
  const int r1 = std::max(2, rng.uniform(extent / 12, extent / 3 + 1));
  const int r2 = std::max(2, rng.uniform(extent / 12, extent / 3 + 1));
  const double angle = rng.uniform(0.0, 180.0);
  std::vector<cv::Point> points;
  switch (rng.uniform(0, 3)) {
    case 0:
      cv::ellipse2Poly(centre, {r1, rng.uniform(0, 2) ? r1 : r2}, static_cast<int>(angle), 0, 360, 5, points);
      break;
    case 1: {
      cv::Point2f corners[4];
      cv::RotatedRect(centre, cv::Size2f(2.f * r1, 2.f * r2), static_cast<float>(angle)).points(corners);
      for (const auto& c : corners) points.emplace_back(cvRound(c.x), cvRound(c.y));
      break;
    }
    default: {
      const int n = rng.uniform(3, 8);
      std::vector<double> angles(n);
      for (auto& a : angles) a = rng.uniform(0.0, 2 * CV_PI);
      std::sort(angles.begin(), angles.end());  // sorted angles: a simple, non-crossing polygon
      for (double a : angles) {
        const double r = rng.uniform(0.4, 1.0) * r1;
        points.emplace_back(centre.x + cvRound(r * std::cos(a)), centre.y + cvRound(r * std::sin(a)));
      }
    }
  }
  return points;
}

// Shapes shaded with their own gradient and alpha-blended over what is below, with
// anti-aliased edges. All work is done inside each shape's bounding box.
void draw_shapes(cv::RNG& rng, cv::Mat3f& canvas) {
  const cv::Rect image(cv::Point(0, 0), canvas.size());
  const int count = rng.uniform(3, 9);
  for (int i = 0; i < count; ++i) {
    const std::vector<cv::Point> outline = random_shape(rng, canvas.size());
    const float alpha = rng.uniform(0.45f, 0.95f);
    const cv::Mat3f corners = colour_grid(rng, 2, 2, 30.f);
    const cv::Rect box = cv::boundingRect(outline) & image;
    if (box.width < 2 || box.height < 2) continue;
    cv::Mat1b mask(box.size(), 0);
    const std::vector<std::vector<cv::Point>> polys{outline};
    cv::fillPoly(mask, polys, cv::Scalar(255), cv::LINE_AA, 0, -box.tl());
    cv::Mat mask3;
    cv::cvtColor(mask, mask3, cv::COLOR_GRAY2BGR);
    cv::Mat3f weight;
    mask3.convertTo(weight, CV_32FC3, alpha / 255.0);
    cv::Mat3f fill;
    cv::resize(corners, fill, box.size(), 0, 0, cv::INTER_LINEAR);
    cv::Mat3f below = canvas(box);
    cv::subtract(fill, below, fill);
    cv::multiply(fill, weight, fill);
    below += fill;  // below + alpha * mask * (fill - below)
  }
}

// A tinted plane wave (fabric, ripples, blinds): texture that flat regions of a photo have.
void add_wave(cv::RNG& rng, cv::Mat3f& canvas) {
  const int w = canvas.cols;
  const int h = canvas.rows;
  const double period = rng.uniform(0.05, 0.4) * std::max(w, h);
  const double direction = rng.uniform(0.0, CV_PI);
  const double fx = 2 * CV_PI / period * std::cos(direction);
  const double fy = 2 * CV_PI / period * std::sin(direction);
  const double phase = rng.uniform(0.0, 2 * CV_PI);
  const float amplitude = rng.uniform(3.f, 12.f);
  const cv::Vec3f tint{amplitude * rng.uniform(0.5f, 1.f), amplitude * rng.uniform(0.5f, 1.f),
                       amplitude * rng.uniform(0.5f, 1.f)};
  // sin(fx x + fy y + p) = sin(fx x) cos(fy y + p) + cos(fx x) sin(fy y + p): one sin() per
  // row and column, then a multiply-add per value. OpenCV has no cheap call for this: its
  // outer-product gemm plus the channel expansion costs several times this loop.
  std::vector<cv::Vec3f> sin_x(w), cos_x(w);
  for (int x = 0; x < w; ++x) {
    sin_x[x] = tint * static_cast<float>(std::sin(fx * x));
    cos_x[x] = tint * static_cast<float>(std::cos(fx * x));
  }
  for (int y = 0; y < h; ++y) {
    const float a = static_cast<float>(std::cos(fy * y + phase));
    const float b = static_cast<float>(std::sin(fy * y + phase));
    cv::Vec3f* row = canvas.ptr<cv::Vec3f>(y);
    for (int x = 0; x < w; ++x) row[x] += sin_x[x] * a + cos_x[x] * b;
  }
}

// Fine detail (grain, foliage, fabric) at a few pixels' scale, and sensor noise per pixel,
// both in brightness only. cv::RNG::fill costs ~5 ns a value, most of an image's budget
// at full size, so the per-pixel noise comes from splitmix64, 4 values a step; its values
// are triangular in [-level, level] (a difference of two uniform bytes).
void add_grain(cv::RNG& rng, cv::Mat3f& canvas) {
  cv::Mat1f detail(std::max(2, canvas.rows / 4), std::max(2, canvas.cols / 4));
  rng.fill(detail, cv::RNG::NORMAL, 0, rng.uniform(2.0, 7.0));
  cv::resize(detail, detail, canvas.size(), 0, 0, cv::INTER_LINEAR);
  const float level = rng.uniform(10.f, 20.f);
  const float scale = level / 255.f;
  const std::uint64_t high = rng.next();
  std::uint64_t state = (high << 32) | rng.next();
  for (int y = 0; y < canvas.rows; ++y) {
    cv::Vec3f* row = canvas.ptr<cv::Vec3f>(y);
    const float* fine = detail.ptr<float>(y);
    for (int x = 0; x < canvas.cols; x += 4) {
      state = splitmix64(state);
      for (int k = 0; k < 4 && x + k < canvas.cols; ++k) {
        const int a = static_cast<int>((state >> (16 * k)) & 0xFF);
        const int b = static_cast<int>((state >> (16 * k + 8)) & 0xFF);
        row[x + k] += cv::Vec3f::all(fine[x + k] + static_cast<float>(a - b) * scale);
      }
    }
  }
}

// The whole picture, in 8-bit BGR.
cv::Mat3b render(cv::RNG& rng, cv::Size size) {
  cv::Mat3f canvas = background(rng, size);
  draw_shapes(rng, canvas);
  add_wave(rng, canvas);
  add_grain(rng, canvas);
  cv::Mat3b pixels;
  canvas.convertTo(pixels, CV_8UC3);  // saturates
  // A light lens blur, so that edges and noise have the spectrum of a photograph. A fixed
  // 5x5 kernel: the size OpenCV derives from sigma is 7x7, twice the cost for no visible gain.
  cv::GaussianBlur(pixels, pixels, cv::Size(5, 5), rng.uniform(0.4, 0.7));
  return pixels;
}

Status encode(cv::RNG& rng, Format format, const cv::Mat3b& pixels, std::vector<uchar>& bytes) {
  const int quality = rng.uniform(75, 96);
  cv::Mat image = pixels;
  std::vector<int> params{cv::IMWRITE_JPEG_QUALITY, quality};
  const char* ext = ".jpg";
  switch (format) {
    case Format::kBaselineJpeg:
      break;
    case Format::kGrayJpeg:
      cv::cvtColor(pixels, image, cv::COLOR_BGR2GRAY);  // a one-component JPEG
      break;
    case Format::kProgressiveJpeg:
      params.insert(params.end(), {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
      break;
    case Format::kPng:
      ext = ".png";
      // zlib's fastest level: higher ones cost 2-5x the time for under 10% on noisy pixels.
      params = {cv::IMWRITE_PNG_COMPRESSION, 1};
      break;
  }
  if (!cv::imencode(ext, image, bytes, params)) {
    return Status::Internal(std::string("OpenCV could not encode a ") + ext +
                            " image; check that its imgcodecs module was built with JPEG and PNG support");
  }
  return Status::Ok();
}

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

Status write_error(const fs::path& path, int err) {
  return Status::IoError("cannot write " + path.string() + ": " + std::generic_category().message(err) +
                         "; check that the folder is writable and the disk has space");
}

Status write_file(const fs::path& path, const std::vector<uchar>& bytes) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) return write_error(path, errno);
  if (std::fwrite(bytes.data(), 1, bytes.size(), file.get()) != bytes.size()) return write_error(path, errno);
  // fclose flushes: its failure (ENOSPC, EIO) is a failed write too.
  if (std::fclose(file.release()) != 0) return write_error(path, errno);
  return Status::Ok();
}

Status write_image(const SyntheticDatasetSpec& spec, std::uint32_t index, const fs::path& path,
                   Format format) {
  try {
    cv::RNG rng = image_rng(spec.seed, index);
    const cv::Mat3b pixels = render(rng, image_size(rng, spec));
    std::vector<uchar> bytes;
    if (Status s = encode(rng, format, pixels, bytes); !s.ok()) return s;
    return write_file(path, bytes);
  } catch (const std::exception& e) {  // cv::Exception, bad_alloc: stop them at the API edge
    return Status::Internal("could not make synthetic image " + path.string() + ": " + e.what());
  }
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
    const Format format = format_of(i, spec.special_every);
    // Round-robin: class sizes differ by at most one.
    const fs::path path = class_dirs[i % spec.classes] /
                          ("img_" + zero_padded(i, image_width) + (format == Format::kPng ? ".png" : ".jpg"));
    return write_image(spec, i, path, format);
  };
  const SequentialOpenCv sequential;
  return run_jobs(spec.images, writer_threads(spec), write_one, progress);
}

}  // namespace forkfeed
