// F.affine and F.rotate as torchvision 0.14 computes them for a uint8 tensor: the inverse
// matrix in double (_get_inverse_affine_matrix), the sampling grid in float32
// (_gen_affine_grid), then grid_sample's CPU kernel (zeros padding, align_corners=False)
// and the fill blend of _apply_grid_transform. Every float operation is done in torch's
// order so each source coordinate and each interpolated value is bit-identical to torch's.
// Torch's grid comes from a BLAS product without fused multiply-adds, but its AVX2
// grid_sample kernel is compiled with FMA contraction: we fuse exactly where it does, and
// nowhere else, which holds as long as this file is built without -mfma (the x86-64
// default) or with -ffp-contract=off.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <opencv2/core.hpp>

#include "transforms/functional.h"

namespace forkfeed::fn {
namespace {

// CPython's math.radians and math.degrees multiply by pi/180 and 180/pi; matching the
// constant keeps the matrix identical to the last bit.
constexpr double kPi = 3.14159265358979323846;
constexpr double kRadiansPerDegree = kPi / 180.0;

using Matrix = std::array<double, 6>;

// The rotation-scale-shear part of _get_inverse_affine_matrix, before its scale: a, b, c, d.
std::array<double, 4> rotation_shear(double angle, const std::array<double, 2>& shear) {
  const double rot = angle * kRadiansPerDegree;
  const double sx = shear[0] * kRadiansPerDegree;
  const double sy = shear[1] * kRadiansPerDegree;
  return {
      std::cos(rot - sy) / std::cos(sy), -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot),
      std::sin(rot - sy) / std::cos(sy), -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot)};
}

// _get_inverse_affine_matrix(center, angle, translate, scale, shear), inverted=True.
Matrix inverse_affine_matrix(const std::array<double, 2>& center, double angle,
                             const std::array<double, 2>& translate, double scale,
                             const std::array<double, 2>& shear) {
  const auto [a, b, c, d] = rotation_shear(angle, shear);
  Matrix m = {d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0};
  const auto [cx, cy] = center;
  const auto [tx, ty] = translate;
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

// The tensor path measures `center` from the image's center, not its corner.
std::array<double, 2> tensor_center(const std::optional<std::array<double, 2>>& center, const cv::Mat& img) {
  if (!center) return {0.0, 0.0};
  return {(*center)[0] - img.cols * 0.5, (*center)[1] - img.rows * 0.5};
}

// fma(a, b, c) rounded once to float, as torch's fused kernels compute it, without libm's
// slow fmaf on CPUs or builds without FMA: the product of two floats is exact in double, so
// the result differs only where the double sum lands exactly on a float midpoint that the
// exact one misses by less than 2^-53.
float fused_multiply_add(float a, float b, float c) {
  return static_cast<float>(static_cast<double>(a) * b + c);
}

// Per output column and row, the terms of _gen_affine_grid's product (base_grid @ theta,
// theta rescaled by half the image's extent), and per output pixel the source coordinate
// in pixels as grid_sample unnormalises it: fma(g + 1, size / 2, -0.5). One per thread,
// reset per image, keeps its column tables' memory.
class SourceGrid {
 public:
  void reset(const Matrix& m, int width, int height) {
    width_ = width;
    height_ = height;
    const float half_w = static_cast<float>(0.5 * width), half_h = static_cast<float>(0.5 * height);
    for (int k = 0; k < 3; ++k) {
      x_theta_[k] = static_cast<float>(m[k]) / half_w;
      y_theta_[k] = static_cast<float>(m[3 + k]) / half_h;
    }
    scale_x_ = static_cast<float>(width) / 2;
    scale_y_ = static_cast<float>(height) / 2;
    column_x_.resize(width);
    column_y_.resize(width);
    for (int i = 0; i < width; ++i) {
      const float base = base_coordinate(i, width);
      column_x_[i] = base * x_theta_[0];
      column_y_[i] = base * y_theta_[0];
    }
  }

  void start_row(int j) {
    const float base = base_coordinate(j, height_);
    row_x_ = base * x_theta_[1];
    row_y_ = base * y_theta_[1];
  }
  float x(int i) const {
    return fused_multiply_add((column_x_[i] + row_x_) + x_theta_[2] + 1.0f, scale_x_, -0.5f);
  }
  float y(int i) const {
    return fused_multiply_add((column_y_[i] + row_y_) + y_theta_[2] + 1.0f, scale_y_, -0.5f);
  }
  // x(i) and y(i) of every column of the row started, rounded half to even to whole pixels
  // as torch's nearest sampling does (INT_MIN past int's range): the same float arithmetic
  // per element, eight at a time with the CPU's fused multiply-add where it has one (torch's
  // own), else in a loop the compiler vectorises (the members read into locals first, as a
  // store of a float could alias them).
  void round_row(int* xs, int* ys) {
#if defined(__x86_64__) && defined(__GNUC__)
    static const bool fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (fma) return round_row_fma(xs, ys);
#endif
    const float* cx = column_x_.data();
    const float* cy = column_y_.data();
    const float rx = row_x_, ry = row_y_, tx = x_theta_[2], ty = y_theta_[2];
    const float sx = scale_x_, sy = scale_y_;
    fx_.resize(static_cast<std::size_t>(width_));
    fy_.resize(static_cast<std::size_t>(width_));
    float* px = fx_.data();
    float* py = fy_.data();
    for (int i = 0; i < width_; ++i) {
      px[i] = fused_multiply_add((cx[i] + rx) + tx + 1.0f, sx, -0.5f);
      py[i] = fused_multiply_add((cy[i] + ry) + ty + 1.0f, sy, -0.5f);
    }
    int i = 0;
#if defined(__SSE2__)
    // cvtps2dq rounds by MXCSR (half to even) and gives INT_MIN out of range: cvRound's own.
    for (; i + 4 <= width_; i += 4) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(xs + i), _mm_cvtps_epi32(_mm_loadu_ps(px + i)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(ys + i), _mm_cvtps_epi32(_mm_loadu_ps(py + i)));
    }
#endif
    for (; i < width_; ++i) {
      xs[i] = cvRound(px[i]);
      ys[i] = cvRound(py[i]);
    }
  }
  int width() const { return width_; }
  int height() const { return height_; }

 private:
  // linspace(-n/2 + 0.5, n/2 - 0.5, n): exact half-integers.
  static float base_coordinate(int k, int n) { return static_cast<float>(k - n * 0.5 + 0.5); }

#if defined(__x86_64__) && defined(__GNUC__)
  // round_row with vfmadd: one rounding, as torch's AVX2 kernel (and fused_multiply_add's
  // emulation) computes each coordinate.
  __attribute__((target("avx2,fma"))) void round_row_fma(int* xs, int* ys) const {
    const __m256 rx = _mm256_set1_ps(row_x_), ry = _mm256_set1_ps(row_y_);
    const __m256 tx = _mm256_set1_ps(x_theta_[2]), ty = _mm256_set1_ps(y_theta_[2]);
    const __m256 sx = _mm256_set1_ps(scale_x_), sy = _mm256_set1_ps(scale_y_);
    const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(-0.5f);
    int i = 0;
    for (; i + 8 <= width_; i += 8) {
      const __m256 gx =
          _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(&column_x_[i]), rx), tx), one);
      const __m256 gy =
          _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(&column_y_[i]), ry), ty), one);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(xs + i),
                          _mm256_cvtps_epi32(_mm256_fmadd_ps(gx, sx, half)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(ys + i),
                          _mm256_cvtps_epi32(_mm256_fmadd_ps(gy, sy, half)));
    }
    for (; i < width_; ++i) {
      xs[i] = cvRound(std::fma((column_x_[i] + row_x_) + x_theta_[2] + 1.0f, scale_x_, -0.5f));
      ys[i] = cvRound(std::fma((column_y_[i] + row_y_) + y_theta_[2] + 1.0f, scale_y_, -0.5f));
    }
  }
#endif

  int width_ = 0, height_ = 0;
  float x_theta_[3] = {}, y_theta_[3] = {};
  float scale_x_ = 0, scale_y_ = 0;
  std::vector<float> column_x_, column_y_;
  std::vector<float> fx_, fy_;  // round_row's, without FMA
  float row_x_ = 0, row_y_ = 0;
};

// torch.round (half to even) and the cast back to uint8.
std::uint8_t to_uint8(float v) { return cv::saturate_cast<std::uint8_t>(v); }

// The input with a border of zero pixels, so that any corner a bilinear sample touches
// can be read: torch's masked gather reads zeros there too.
class PaddedSource {
 public:
  explicit PaddedSource(const cv::Mat& img)
      : width_(img.cols), height_(img.rows), pixel_bytes_(static_cast<int>(img.elemSize())) {
    thread_local cv::Mat padded;  // reused: no allocation per call for a steady image size
    // ISOLATED: a view's neighbours in its parent image are not its border.
    cv::copyMakeBorder(img, padded, 1, 1, 1, 1, cv::BORDER_CONSTANT | cv::BORDER_ISOLATED,
                       cv::Scalar::all(0));
    padded_ = &padded;
  }
  // REQUIRES: -1 <= x <= width, -1 <= y <= height.
  const std::uint8_t* at(int x, int y) const {
    return padded_->ptr<std::uint8_t>(y + 1) + pixel_bytes_ * (x + 1);
  }
  bool contains(int x, int y) const { return x >= 0 && x < width_ && y >= 0 && y < height_; }
  // Bytes from one row to the next.
  std::size_t step() const { return padded_->step; }
  int width() const { return width_; }
  int height() const { return height_; }

 private:
  int width_, height_, pixel_bytes_;
  const cv::Mat* padded_;
};

// The bytes of the pixel `fill` makes in an image of `img`'s type, as torch casts the fill
// to its dtype.
using PixelBytes = std::array<std::uint8_t, 3>;
PixelBytes fill_pixel(const cv::Mat& img, const Fill& fill) {
  PixelBytes pixel{};
  if (img.type() == CV_16UC1) {
    const auto value = cv::saturate_cast<std::uint16_t>(fill[0]);
    std::memcpy(pixel.data(), &value, sizeof value);
  } else {
    for (int c = 0; c < img.channels(); ++c) pixel[c] = to_uint8(fill[c]);
  }
  return pixel;
}

template <int kBytes>
void sample_nearest_as(const PaddedSource& src, SourceGrid& grid, const PixelBytes& outside, cv::Mat& dst) {
  thread_local std::vector<int> column_table, row_table;
  column_table.resize(static_cast<std::size_t>(dst.cols));
  row_table.resize(static_cast<std::size_t>(dst.cols));
  // Everything the loop reads, in locals: a store of a byte may alias any memory, which
  // would make the compiler read members, thread_locals and the Mat's step again per pixel.
  int* const xs = column_table.data();
  int* const ys = row_table.data();
  const std::uint8_t* const fill = outside.data();
  const std::uint8_t* const origin = src.at(0, 0);
  const std::size_t step = src.step();
  const unsigned width = static_cast<unsigned>(src.width()), height = static_cast<unsigned>(src.height());
  const int columns = dst.cols;
  for (int j = 0; j < dst.rows; ++j) {
    grid.start_row(j);
    grid.round_row(xs, ys);
    std::uint8_t* out = dst.ptr<std::uint8_t>(j);
    for (int i = 0; i < columns; ++i, out += kBytes) {
      const int x = xs[i], y = ys[i];
      // Inside when 0 <= x < width and 0 <= y < height: one unsigned compare each.
      const bool inside = static_cast<unsigned>(x) < width && static_cast<unsigned>(y) < height;
      const std::uint8_t* in = inside ? origin + static_cast<std::size_t>(y) * step + kBytes * x : fill;
      std::memcpy(out, in, kBytes);
    }
  }
}

void sample_nearest(const PaddedSource& src, SourceGrid& grid, const PixelBytes& outside, cv::Mat& dst) {
  switch (dst.elemSize()) {
    case 1: return sample_nearest_as<1>(src, grid, outside, dst);
    case 2: return sample_nearest_as<2>(src, grid, outside, dst);
    default: return sample_nearest_as<3>(src, grid, outside, dst);
  }
}

// One output pixel of grid_sample's bilinear kernel: the three channels and the sampled
// mask (the weight that fell inside the image), each the sum over nw, ne, sw, se in torch's
// order and fusion.
struct Bilinear {
  float value[3] = {0, 0, 0};
  float mask = 0;
};

Bilinear bilinear_at(const PaddedSource& src, float x, float y) {
  Bilinear r;
  const float x_w = std::floor(x), y_n = std::floor(y);
  // Past here no corner is inside (and the casts below could overflow).
  if (!(x_w >= -1 && x_w < src.width() && y_n >= -1 && y_n < src.height())) return r;
  const float w = x - x_w, e = 1.0f - w, n = y - y_n, s = 1.0f - n;
  const float nw = s * e, ne = s * w, sw = n * e, se = n * w;
  const int ix = static_cast<int>(x_w), iy = static_cast<int>(y_n);
  const std::uint8_t* north = src.at(ix, iy);
  const std::uint8_t* south = src.at(ix, iy + 1);
  for (int c = 0; c < 3; ++c) {
    float v = north[c] * nw;
    v = fused_multiply_add(north[3 + c], ne, v);
    v = fused_multiply_add(south[c], sw, v);
    r.value[c] = fused_multiply_add(south[3 + c], se, v);
  }
  float mask = src.contains(ix, iy) ? nw : 0.0f;
  mask = fused_multiply_add(src.contains(ix + 1, iy), ne, mask);
  mask = fused_multiply_add(src.contains(ix, iy + 1), sw, mask);
  r.mask = fused_multiply_add(src.contains(ix + 1, iy + 1), se, mask);
  return r;
}

void sample_bilinear(const PaddedSource& src, SourceGrid& grid, const Fill& fill, cv::Mat& dst) {
  // fill=None skips the blend; blending with zeros would scale the border twice.
  const bool blend = fill != Fill{0, 0, 0};
  for (int j = 0; j < dst.rows; ++j) {
    grid.start_row(j);
    std::uint8_t* out = dst.ptr<std::uint8_t>(j);
    for (int i = 0; i < dst.cols; ++i, out += 3) {
      const Bilinear b = bilinear_at(src, grid.x(i), grid.y(i));
      for (int c = 0; c < 3; ++c) {
        out[c] = to_uint8(blend ? b.value[c] * b.mask + (1.0f - b.mask) * fill[c] : b.value[c]);
      }
    }
  }
}

// _apply_grid_transform(img, _gen_affine_grid(theta, ...), mode, fill), the output the
// input's size; the input is copied aside first so img can be written in place.
void warp(cv::Mat& img, const Matrix& m, Interpolation interpolation, const Fill& fill) {
  if (img.empty()) return;
  const bool mask = img.type() == CV_8UC1 || img.type() == CV_16UC1;
  CV_Assert(img.type() == CV_8UC3 || (mask && interpolation == Interpolation::kNearest));
  const PaddedSource source(img);
  thread_local SourceGrid grid;
  grid.reset(m, img.cols, img.rows);
  if (interpolation == Interpolation::kNearest) {
    sample_nearest(source, grid, fill_pixel(img, fill), img);
  } else {
    sample_bilinear(source, grid, fill, img);
  }
}

}  // namespace

cv::Mat crop(const cv::Mat& img, int x, int y, int width, int height, const Fill& fill) {
  const cv::Rect want(x, y, width, height);
  const cv::Rect inside = want & cv::Rect(0, 0, img.cols, img.rows);
  if (inside == want) return img(want);
  cv::Mat out(height, width, img.type(), cv::Scalar(fill[0], fill[1], fill[2]));
  if (!inside.empty()) img(inside).copyTo(out(inside - want.tl()));
  return out;
}

void affine(cv::Mat& img, const AffineParams& params, Interpolation interpolation, const Fill& fill) {
  const Matrix m = inverse_affine_matrix(tensor_center(params.center, img), params.angle, params.translate,
                                         params.scale, params.shear);
  warp(img, m, interpolation, fill);
}

void rotate(cv::Mat& img, double angle, Interpolation interpolation, const Fill& fill,
            std::optional<std::array<double, 2>> center) {
  // F.rotate negates the angle: affine turns clockwise, rotate counter-clockwise.
  const Matrix m = inverse_affine_matrix(tensor_center(center, img), -angle, {0.0, 0.0}, 1.0, {0.0, 0.0});
  warp(img, m, interpolation, fill);
}

std::array<double, 6> affine_matrix(const AffineParams& params, int width, int height) {
  const auto [a, b, c, d] = rotation_shear(params.angle, params.shear);
  const double scale = params.scale;
  std::array<double, 6> m = {a * scale, b * scale, 0.0, c * scale, d * scale, 0.0};
  const auto [cx, cy] = params.center.value_or(std::array<double, 2>{width * 0.5, height * 0.5});
  m[2] += m[0] * (-cx) + m[1] * (-cy);
  m[5] += m[3] * (-cx) + m[4] * (-cy);
  m[2] += cx + params.translate[0];
  m[5] += cy + params.translate[1];
  return m;
}

void repeat(cv::Mat& img, const Move& move, const Fill& fill) {
  switch (move.kind) {
    case Move::Kind::kHflip: hflip(img); break;
    case Move::Kind::kVflip: vflip(img); break;
    case Move::Kind::kAffine: affine(img, move.affine, Interpolation::kNearest, fill); break;
  }
}

}  // namespace forkfeed::fn
