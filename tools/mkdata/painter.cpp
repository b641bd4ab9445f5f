// Paints one photo-like synthetic image. Draws must happen in a fixed order for
// byte-identical output on every compiler: never two draws as arguments of one call
// (unspecified order); braced lists are ordered.
#include "tools/mkdata/painter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "tools/mkdata/splitmix64.h"

namespace forkfeed::mkdata {
namespace {

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

}  // namespace

cv::Mat3b paint_image(cv::RNG& rng, cv::Size size) {
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

}  // namespace forkfeed::mkdata
