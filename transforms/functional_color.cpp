// The colour, blur and flip ops of transforms/functional.h, each in torchvision 0.14's
// tensor arithmetic for uint8 images: float32 where torch computes in float32, every
// product rounded before it is summed (torch runs one kernel per operator), and torch's
// truncating `.to(torch.uint8)` or its round-half-to-even where it rounds. (Built for
// a target with FMA, GCC's default -ffp-contract=fast may fuse products into additions,
// which can move a value by a level: the vector kernels' targets name no FMA, and the
// scalar loops take the blends' products from tables; tests/colour_kernels_test.cpp
// holds the two to the same bytes.)
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "base/cpu_features.h"
#include "transforms/functional.h"

namespace forkfeed::fn {
namespace {

// A float32 value for each uint8 level.
using Levels = std::array<float, 256>;

// Every row of `img` (which may be a view) as interleaved RGB bytes.
template <typename RowOp>
void for_each_row(cv::Mat& img, RowOp&& row_op) {
  for (int y = 0; y < img.rows; ++y) row_op(img.ptr<uint8_t>(y), img.cols);
}

// torch's `.clamp(0, 255).to(torch.uint8)`: the cast truncates.
uint8_t clamp_to_u8(float value) { return static_cast<uint8_t>(std::clamp(value, 0.0f, 255.0f)); }

// `factor * level` in float32 for every level: one side of torch's _blend.
Levels scaled_levels(float factor) {
  Levels out;
  for (int v = 0; v < 256; ++v) out[v] = factor * static_cast<float>(v);
  return out;
}

// _blend(img1, img2, ratio) = ratio * img1 + (1.0 - ratio) * img2, the weights float32
// scalars (the second computed in double first, as Python does).
struct BlendWeights {
  float own;
  float other;
};
BlendWeights blend_weights(double ratio) {
  return {static_cast<float>(ratio), static_cast<float>(1.0 - ratio)};
}

#if defined(__x86_64__) && defined(__GNUC__)
// The whole table in four 64-byte registers, 64 bytes looked up at once: AVX-512 VBMI's
// two-table byte permutes, where the CPU has them (OpenCV's cv::LUT takes a byte at a time).
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void lut_bytes_64(uint8_t* bytes, std::size_t count,
                                                                         const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  for (std::size_t i = 0; i < count; i += 64) {
    const __mmask64 part = count - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (count - i)) - 1;
    const __m512i level = _mm512_maskz_loadu_epi8(part, bytes + i);
    const __m512i low = _mm512_permutex2var_epi8(t0, level, t1);   // levels 0-127, by their low 7 bits
    const __m512i high = _mm512_permutex2var_epi8(t2, level, t3);  // levels 128-255
    _mm512_mask_storeu_epi8(bytes + i, part, _mm512_mask_blend_epi8(_mm512_movepi8_mask(level), low, high));
  }
}
#else
void lut_bytes_64(uint8_t*, std::size_t, const uint8_t*) {}
#endif

void apply_lut(cv::Mat& img, const std::array<uint8_t, 256>& lut) {
  if (cpu_has_avx512_vbmi()) {
    for_each_row(img, [&](uint8_t* row, int width) {
      lut_bytes_64(row, 3 * static_cast<std::size_t>(width), lut.data());
    });
    return;
  }
  cv::LUT(img, cv::Mat(1, 256, CV_8UC1, const_cast<uint8_t*>(lut.data())), img);
}

// One table per channel, for the ops that treat R, G and B each on its own.
void apply_channel_luts(cv::Mat& img, const std::array<std::array<uint8_t, 256>, 3>& luts) {
  cv::Mat table(1, 256, CV_8UC3);
  auto* entries = table.ptr<uint8_t>();
  for (int v = 0; v < 256; ++v) {
    for (int c = 0; c < 3; ++c) entries[3 * v + c] = luts[c][v];
  }
  cv::LUT(img, table, img);
}

// rgb_to_grayscale's (0.2989 * r + 0.587 * g + 0.114 * b).to(uint8), one table per weight.
class Grayscale {
 public:
  Grayscale() : red_(scaled_levels(0.2989f)), green_(scaled_levels(0.587f)), blue_(scaled_levels(0.114f)) {}
  uint8_t operator()(const uint8_t* rgb) const {
    return static_cast<uint8_t>(red_[rgb[0]] + green_[rgb[1]] + blue_[rgb[2]]);
  }

 private:
  Levels red_, green_, blue_;
};

#if defined(__x86_64__) && defined(__GNUC__)
// The AVX2 kernels below: the same float32 operations as the loops they stand for.
void saturate_8(uint8_t* px, float own, float other);
int64_t gray_sum_8(const uint8_t* row, int width, const Grayscale& gray);
#else
void saturate_8(uint8_t*, float, float) {}
int64_t gray_sum_8(const uint8_t*, int, const Grayscale&) { return 0; }
#endif

// torch.mean(rgb_to_grayscale(img).to(float32)): torch sums in float32, which is exact
// while the sum stays below 2^24 (any image up to 65793 pixels); an exact integer sum
// matches it there and is the closest float beyond. Eight pixels at once where the CPU
// has AVX2 (`vector`).
float grayscale_mean(cv::Mat& img, bool vector) {
  const Grayscale gray;
  int64_t sum = 0;
  for_each_row(img, [&](const uint8_t* row, int width) {
    if (vector) {
      sum += gray_sum_8(row, width, gray);
      return;
    }
    int64_t row_sum = 0;
    for (int x = 0; x < width; ++x) row_sum += gray(row + 3 * x);
    sum += row_sum;
  });
  return static_cast<float>(sum) / static_cast<float>(img.total());
}

// The per-channel (minimum, maximum) of img.
std::array<std::array<uint8_t, 2>, 3> channel_ranges(cv::Mat& img) {
  std::array<std::array<uint8_t, 2>, 3> ranges = {{{255, 0}, {255, 0}, {255, 0}}};
  for_each_row(img, [&](const uint8_t* row, int width) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        ranges[c][0] = std::min(ranges[c][0], row[3 * x + c]);
        ranges[c][1] = std::max(ranges[c][1], row[3 * x + c]);
      }
    }
  });
  return ranges;
}

// autocontrast's table for one channel: (v - min) * (255 / (max - min)), the division
// being torch's reciprocal() * 255; a flat channel stays as it is.
std::array<uint8_t, 256> autocontrast_lut(uint8_t minimum, uint8_t maximum) {
  std::array<uint8_t, 256> lut;
  const bool flat = minimum == maximum;
  const float offset = flat ? 0.0f : static_cast<float>(minimum);
  const float scale = flat ? 1.0f : (1.0f / static_cast<float>(maximum - minimum)) * 255.0f;
  for (int v = 0; v < 256; ++v) lut[v] = clamp_to_u8((static_cast<float>(v) - offset) * scale);
  return lut;
}

// _scale_channel's table: integer floor divisions throughout; `hist` is one channel's.
std::array<uint8_t, 256> equalize_lut(const std::array<int64_t, 256>& hist) {
  std::array<uint8_t, 256> lut;
  int64_t total = 0;
  int64_t last_nonzero = 0;
  for (int64_t count : hist) {
    total += count;
    if (count != 0) last_nonzero = count;
  }
  // The sum of every non-zero bin but the last one.
  const int64_t step = (total - last_nonzero) / 255;
  int64_t cumulative = 0;
  for (int v = 0; v < 256; ++v) {
    // The table is shifted right by one: level v maps through the sum of bins below it.
    lut[v] = step == 0 ? static_cast<uint8_t>(v)
                       : static_cast<uint8_t>(std::min<int64_t>((cumulative + step / 2) / step, 255));
    cumulative += hist[v];
  }
  return lut;
}

// _get_gaussian_kernel1d in float32: pdf = exp(-0.5 * (x / sigma)^2) over
// linspace(-(k-1)/2, (k-1)/2, k), divided by its sum.
cv::Mat gaussian_kernel(int size, double sigma) {
  cv::Mat kernel(size, 1, CV_32F);
  const float sigma_f = static_cast<float>(sigma);
  const float half = static_cast<float>(size - 1) * 0.5f;
  float sum = 0;
  for (int i = 0; i < size; ++i) {
    const float ratio = (static_cast<float>(i) - half) / sigma_f;
    kernel.at<float>(i) = std::exp(-0.5f * (ratio * ratio));
    sum += kernel.at<float>(i);
  }
  for (int i = 0; i < size; ++i) kernel.at<float>(i) /= sum;
  return kernel;
}

// _rgb2hsv then _hsv2rgb of one pixel, levels as float32 v / 255 (convert_image_dtype),
// with the hue turned by `hue_shift`; results are (x * 255).to(uint8), truncated.
class HueShift {
 public:
  explicit HueShift(float hue_shift) : shift_(hue_shift) {
    for (int v = 0; v < 256; ++v) unit_[v] = static_cast<float>(v) / 255.0f;
  }

  void operator()(uint8_t* rgb) const {
    const float r = unit_[rgb[0]], g = unit_[rgb[1]], b = unit_[rgb[2]];
    const float maxc = std::max({r, g, b});
    const float minc = std::min({r, g, b});
    const bool flat = maxc == minc;
    const float chroma = maxc - minc;
    const float s = chroma / (flat ? 1.0f : maxc);
    const float divisor = flat ? 1.0f : chroma;
    const float rc = (maxc - r) / divisor, gc = (maxc - g) / divisor, bc = (maxc - b) / divisor;
    float h;
    if (maxc == r) {
      h = bc - gc;
    } else if (maxc == g) {
      h = 2.0f + rc - bc;
    } else {
      h = 4.0f + gc - rc;
    }
    h = fraction(h / 6.0f + 1.0f);
    write_rgb(fraction(h + shift_), s, maxc, rgb);
  }

 private:
  // floor(x) for |x| < 2^31, without the library call that SSE2 would need.
  static float floor_of(float x) {
    const auto truncated = static_cast<float>(static_cast<int>(x));
    return truncated > x ? truncated - 1.0f : truncated;
  }

  // x - floor(x): torch.fmod(x, 1.0) for x >= 0, and torch.remainder(x, 1.0), which adds
  // 1 to a negative fmod, for any x; the same float either way, as fmod is exact and
  // both round x + k only once.
  static float fraction(float x) { return x - floor_of(x); }

  // clamp(x, 0, 1) as minss/maxss rather than branches, which noise mispredicts.
  static float unit_clamp(float x) { return std::min(std::max(x, 0.0f), 1.0f); }

  static void write_rgb(float h, float s, float v, uint8_t* rgb) {
    const float sector = floor_of(h * 6.0f);
    const float f = h * 6.0f - sector;
    const float p = unit_clamp(v * (1.0f - s));
    const float q = unit_clamp(v * (1.0f - s * f));
    const float t = unit_clamp(v * (1.0f - s * (1.0f - f)));
    // h can round up to 1.0, sector 6, which torch's `i % 6` folds to 0.
    const std::array<std::array<float, 3>, 6> by_sector = {
        {{v, t, p}, {q, v, p}, {p, v, t}, {p, q, v}, {t, p, v}, {v, p, q}}};
    const auto& out = by_sector[static_cast<size_t>(static_cast<int>(sector) % 6)];
    for (int c = 0; c < 3; ++c) rgb[c] = static_cast<uint8_t>(out[c] * 255.0f);
  }

  float shift_;
  Levels unit_;
};

// _blurred_degenerate_image's 3x3 kernel (1s around a 5, over 13) rounded to nearest: in
// integers, round(sum / 13) exactly, since sum / 13 never ends in .5.
uint8_t degenerate(const uint8_t* up, const uint8_t* mid, const uint8_t* down) {
  const int sum = up[-3] + up[0] + up[3] + mid[-3] + 5 * mid[0] + mid[3] + down[-3] + down[0] + down[3];
  return static_cast<uint8_t>((2 * sum + 13) / 26);
}

}  // namespace

void adjust_brightness(cv::Mat& img, double factor) {
  // _blend with a black image: (1 - factor) * 0 adds nothing.
  const Levels scaled = scaled_levels(blend_weights(factor).own);
  std::array<uint8_t, 256> lut;
  for (int v = 0; v < 256; ++v) lut[v] = clamp_to_u8(scaled[v]);
  apply_lut(img, lut);
}

namespace {

void contrast(cv::Mat& img, double factor, bool vector) {
  const BlendWeights weights = blend_weights(factor);
  const float mean_part = weights.other * grayscale_mean(img, vector);
  const Levels scaled = scaled_levels(weights.own);
  std::array<uint8_t, 256> lut;
  for (int v = 0; v < 256; ++v) lut[v] = clamp_to_u8(scaled[v] + mean_part);
  apply_lut(img, lut);
}

void saturation(cv::Mat& img, double factor, bool vector) {
  const BlendWeights weights = blend_weights(factor);
  const Levels own = scaled_levels(weights.own);
  const Levels other = scaled_levels(weights.other);
  const Grayscale gray;
  for_each_row(img, [&](uint8_t* row, int width) {
    uint8_t* px = row;
    if (vector) {
      for (; px + 24 <= row + 3 * width; px += 24) saturate_8(px, weights.own, weights.other);
    }
    for (; px < row + 3 * width; px += 3) {
      const float gray_part = other[gray(px)];
      for (int c = 0; c < 3; ++c) px[c] = clamp_to_u8(own[px[c]] + gray_part);
    }
  });
}

}  // namespace

void adjust_contrast(cv::Mat& img, double factor) { contrast(img, factor, cpu_has_avx2()); }
void adjust_contrast_scalar(cv::Mat& img, double factor) { contrast(img, factor, false); }
void adjust_saturation(cv::Mat& img, double factor) { saturation(img, factor, cpu_has_avx2()); }
void adjust_saturation_scalar(cv::Mat& img, double factor) { saturation(img, factor, false); }

#if defined(__x86_64__) && defined(__GNUC__)
namespace {

#define FORKFEED_AVX2 __attribute__((target("avx2"), always_inline)) inline

// floor(x) for |x| < 2^31 as HueShift::floor_of: truncate, then 1 less where that rose.
FORKFEED_AVX2 __m256 floor_of8(__m256 x) {
  const __m256 truncated = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(x));
  return _mm256_sub_ps(truncated,
                       _mm256_and_ps(_mm256_cmp_ps(truncated, x, _CMP_GT_OQ), _mm256_set1_ps(1.0f)));
}
FORKFEED_AVX2 __m256 fraction8(__m256 x) { return _mm256_sub_ps(x, floor_of8(x)); }
FORKFEED_AVX2 __m256 unit_clamp8(__m256 x) {
  return _mm256_min_ps(_mm256_max_ps(x, _mm256_setzero_ps()), _mm256_set1_ps(1.0f));
}
// Of six values by sector (0 to 5; 6 is 0): the mask `in[k]` of each sector k.
FORKFEED_AVX2 __m256 by_sector8(const __m256 (&in)[6], const __m256 (&value)[6]) {
  __m256 out = value[5];
  for (int k = 4; k >= 0; --k) out = _mm256_blendv_ps(out, value[k], in[k]);
  return out;
}

// The eight pixels at px (24 bytes) as float32 R, G and B levels.
FORKFEED_AVX2 void load_rgb8(const uint8_t* px, __m256 (&rgb)[3]) {
  const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(px));
  const __m128i tail = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(px + 16));
  const __m128i from_head[3] = {_mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                                _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1),
                                _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)};
  const __m128i from_tail[3] = {_mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, -1, -1, -1, -1, -1, -1, -1, -1),
                                _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, -1, -1, -1, -1, -1, -1, -1, -1),
                                _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, -1, -1, -1, -1, -1, -1, -1, -1)};
  for (int c = 0; c < 3; ++c) {
    const __m128i levels =
        _mm_or_si128(_mm_shuffle_epi8(head, from_head[c]), _mm_shuffle_epi8(tail, from_tail[c]));
    rgb[c] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(levels));
  }
}

// Writes eight pixels' R, G and B levels (each 0 to 255) to px, interleaved.
FORKFEED_AVX2 void store_rgb8(uint8_t* px, const __m256i (&rgb)[3]) {
  // Per 128-bit half: R of four pixels, then G, B, B again; then interleaved.
  const __m256i bytes =
      _mm256_packus_epi16(_mm256_packus_epi32(rgb[0], rgb[1]), _mm256_packus_epi32(rgb[2], rgb[2]));
  const __m256i order = _mm256_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1, 0, 4, 8, 1, 5,
                                         9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1);
  const __m256i pixels = _mm256_shuffle_epi8(bytes, order);
  const __m128i low = _mm256_castsi256_si128(pixels), high = _mm256_extracti128_si256(pixels, 1);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(px), low);
  const int32_t low_rest = _mm_cvtsi128_si32(_mm_srli_si128(low, 8));
  std::memcpy(px + 8, &low_rest, 4);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(px + 12), high);
  const int32_t high_rest = _mm_cvtsi128_si32(_mm_srli_si128(high, 8));
  std::memcpy(px + 20, &high_rest, 4);
}

// Grayscale's level of eight pixels: ((0.2989 r + 0.587 g) + 0.114 b), each product
// rounded, truncated.
FORKFEED_AVX2 __m256i gray8(const __m256 (&rgb)[3]) {
  const __m256 sum = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(0.2989f), rgb[0]),
                                                 _mm256_mul_ps(_mm256_set1_ps(0.587f), rgb[1])),
                                   _mm256_mul_ps(_mm256_set1_ps(0.114f), rgb[2]));
  return _mm256_cvttps_epi32(sum);
}

// adjust_saturation's blend of eight pixels with their grey: clamp_to_u8(own * level +
// other * grey), the same float32 operations as the pixel-by-pixel loop.
__attribute__((target("avx2"))) void saturate_8(uint8_t* px, float own, float other) {
  __m256 rgb[3];
  load_rgb8(px, rgb);
  const __m256 gray_part = _mm256_mul_ps(_mm256_set1_ps(other), _mm256_cvtepi32_ps(gray8(rgb)));
  __m256i out[3];
  for (int c = 0; c < 3; ++c) {
    const __m256 blended = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(own), rgb[c]), gray_part);
    out[c] = _mm256_cvttps_epi32(
        _mm256_min_ps(_mm256_max_ps(blended, _mm256_setzero_ps()), _mm256_set1_ps(255.0f)));
  }
  store_rgb8(px, out);
}

// The sum of Grayscale's levels of a row of `width` pixels, eight at a time.
__attribute__((target("avx2"))) int64_t gray_sum_8(const uint8_t* row, int width, const Grayscale& gray) {
  __m256i sums = _mm256_setzero_si256();
  int x = 0;
  for (; x + 8 <= width; x += 8) {
    __m256 rgb[3];
    load_rgb8(row + 3 * x, rgb);
    sums = _mm256_add_epi32(sums, gray8(rgb));  // at most 255 x (width / 8) a lane
  }
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sums);
  int64_t sum = 0;
  for (const int32_t lane : lanes) sum += lane;
  for (; x < width; ++x) sum += gray(row + 3 * x);
  return sum;
}

// HueShift on eight pixels at once with AVX2: the same float32 operations in the same
// order (divisions as divisions, no fused multiply-add: the target has none), so the same
// bytes.
__attribute__((target("avx2"))) void shift_hue_8(uint8_t* px, float factor) {
  alignas(32) int32_t level[3][8];
  for (int i = 0; i < 8; ++i) {
    for (int c = 0; c < 3; ++c) level[c][i] = px[3 * i + c];
  }
  const __m256 one = _mm256_set1_ps(1.0f), six = _mm256_set1_ps(6.0f), full = _mm256_set1_ps(255.0f);
  __m256 rgb[3];
  for (int c = 0; c < 3; ++c) {
    rgb[c] = _mm256_div_ps(_mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(level[c]))),
                           full);
  }
  const __m256 r = rgb[0], g = rgb[1], b = rgb[2];
  const __m256 maxc = _mm256_max_ps(_mm256_max_ps(r, g), b), minc = _mm256_min_ps(_mm256_min_ps(r, g), b);
  const __m256 flat = _mm256_cmp_ps(maxc, minc, _CMP_EQ_OQ);
  const __m256 chroma = _mm256_sub_ps(maxc, minc);
  const __m256 s = _mm256_div_ps(chroma, _mm256_blendv_ps(maxc, one, flat));
  const __m256 divisor = _mm256_blendv_ps(chroma, one, flat);
  const __m256 rc = _mm256_div_ps(_mm256_sub_ps(maxc, r), divisor);
  const __m256 gc = _mm256_div_ps(_mm256_sub_ps(maxc, g), divisor);
  const __m256 bc = _mm256_div_ps(_mm256_sub_ps(maxc, b), divisor);
  __m256 h = _mm256_sub_ps(_mm256_add_ps(_mm256_set1_ps(4.0f), gc), rc);
  h = _mm256_blendv_ps(h, _mm256_sub_ps(_mm256_add_ps(_mm256_set1_ps(2.0f), rc), bc),
                       _mm256_cmp_ps(maxc, g, _CMP_EQ_OQ));
  h = _mm256_blendv_ps(h, _mm256_sub_ps(bc, gc), _mm256_cmp_ps(maxc, r, _CMP_EQ_OQ));
  h = fraction8(_mm256_add_ps(_mm256_div_ps(h, six), one));
  h = fraction8(_mm256_add_ps(h, _mm256_set1_ps(factor)));
  // write_rgb(h, s, v = maxc).
  const __m256 sector = floor_of8(_mm256_mul_ps(h, six));
  const __m256 f = _mm256_sub_ps(_mm256_mul_ps(h, six), sector);
  const __m256 p = unit_clamp8(_mm256_mul_ps(maxc, _mm256_sub_ps(one, s)));
  const __m256 q = unit_clamp8(_mm256_mul_ps(maxc, _mm256_sub_ps(one, _mm256_mul_ps(s, f))));
  const __m256 t =
      unit_clamp8(_mm256_mul_ps(maxc, _mm256_sub_ps(one, _mm256_mul_ps(s, _mm256_sub_ps(one, f)))));
  const __m256i i = _mm256_cvttps_epi32(sector);
  __m256 in[6];
  for (int k = 0; k < 6; ++k) in[k] = _mm256_castsi256_ps(_mm256_cmpeq_epi32(i, _mm256_set1_epi32(k)));
  in[0] = _mm256_or_ps(in[0], _mm256_castsi256_ps(_mm256_cmpeq_epi32(i, _mm256_set1_epi32(6))));
  // By sector: (v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q).
  const __m256 channel[3] = {by_sector8(in, {maxc, q, p, p, t, maxc}),
                             by_sector8(in, {t, maxc, maxc, q, p, p}),
                             by_sector8(in, {p, p, t, maxc, maxc, q})};
  for (int c = 0; c < 3; ++c) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(level[c]),
                       _mm256_cvttps_epi32(_mm256_mul_ps(channel[c], full)));
  }
  for (int k = 0; k < 8; ++k) {
    for (int c = 0; c < 3; ++c) px[3 * k + c] = static_cast<uint8_t>(level[c][k]);
  }
}

#undef FORKFEED_AVX2

}  // namespace
#endif

void adjust_hue(cv::Mat& img, double hue_factor) {
  const HueShift shift(static_cast<float>(hue_factor));
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) {
    const auto factor = static_cast<float>(hue_factor);
    for_each_row(img, [&](uint8_t* row, int width) {
      uint8_t* px = row;
      for (; px + 24 <= row + 3 * width; px += 24) shift_hue_8(px, factor);
      for (; px < row + 3 * width; px += 3) shift(px);
    });
    return;
  }
#endif
  adjust_hue_scalar(img, hue_factor);
}

void adjust_hue_scalar(cv::Mat& img, double hue_factor) {
  const HueShift shift(static_cast<float>(hue_factor));
  for_each_row(img, [&](uint8_t* row, int width) {
    for (uint8_t* px = row; px < row + 3 * width; px += 3) shift(px);
  });
}

void permute_channels(cv::Mat& img, const std::array<int, 3>& permutation) {
  if (permutation == std::array<int, 3>{0, 1, 2}) return;
  const int from[] = {permutation[0], 0, permutation[1], 1, permutation[2], 2};
  const cv::Mat source = img.clone();
  cv::mixChannels(&source, 1, &img, 1, from, 3);
}

void rgb_to_grayscale(cv::Mat& img) {
  const Grayscale gray;
  for_each_row(img, [&](uint8_t* row, int width) {
    for (uint8_t* px = row; px < row + 3 * width; px += 3) px[0] = px[1] = px[2] = gray(px);
  });
}

void posterize(cv::Mat& img, int bits) {
  // torch's `img & -(2 ** (8 - bits))`, the mask cast to uint8 (so 0 for bits = 0).
  const auto mask = static_cast<uint8_t>(0xFF << (8 - std::clamp(bits, 0, 8)));
  std::array<uint8_t, 256> lut;
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(v & mask);
  apply_lut(img, lut);
}

void solarize(cv::Mat& img, double threshold) {
  // torch compares the uint8 levels with the threshold as float32.
  const auto bound = static_cast<float>(threshold);
  std::array<uint8_t, 256> lut;
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(static_cast<float>(v) >= bound ? 255 - v : v);
  apply_lut(img, lut);
}

void autocontrast(cv::Mat& img) {
  const auto ranges = channel_ranges(img);
  std::array<std::array<uint8_t, 256>, 3> luts;
  for (int c = 0; c < 3; ++c) luts[c] = autocontrast_lut(ranges[c][0], ranges[c][1]);
  apply_channel_luts(img, luts);
}

void equalize(cv::Mat& img) {
  std::array<std::array<int64_t, 256>, 3> hists = {};
  for_each_row(img, [&](const uint8_t* row, int width) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) ++hists[c][row[3 * x + c]];
    }
  });
  std::array<std::array<uint8_t, 256>, 3> luts;
  for (int c = 0; c < 3; ++c) luts[c] = equalize_lut(hists[c]);
  apply_channel_luts(img, luts);
}

void adjust_sharpness(cv::Mat& img, double factor) {
  if (img.rows <= 2 || img.cols <= 2) return;
  const BlendWeights weights = blend_weights(factor);
  const Levels own = scaled_levels(weights.own);
  const Levels other = scaled_levels(weights.other);
  const cv::Mat source = img.clone();
  const int row_bytes = 3 * img.cols;
  // The blurred image keeps the 1-pixel border, so there the blend is of a pixel with
  // itself — which torch computes all the same, and which can lose a level.
  const auto blend_row = [&](const uint8_t* row, const uint8_t* blurred, uint8_t* out, int begin, int end) {
    for (int i = begin; i < end; ++i) out[i] = clamp_to_u8(own[row[i]] + other[blurred[i]]);
  };
  std::vector<uint8_t> blurred(static_cast<size_t>(row_bytes));
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* row = source.ptr<uint8_t>(y);
    uint8_t* out = img.ptr<uint8_t>(y);
    if (y == 0 || y == img.rows - 1) {
      blend_row(row, row, out, 0, row_bytes);
      continue;
    }
    const uint8_t* up = source.ptr<uint8_t>(y - 1);
    const uint8_t* down = source.ptr<uint8_t>(y + 1);
    for (int i = 3; i < row_bytes - 3; ++i) blurred[i] = degenerate(up + i, row + i, down + i);
    blend_row(row, row, out, 0, 3);
    blend_row(row, blurred.data(), out, 3, row_bytes - 3);
    blend_row(row, row, out, row_bytes - 3, row_bytes);
  }
}

void invert(cv::Mat& img) {
  std::array<uint8_t, 256> lut;
  for (int v = 0; v < 256; ++v) lut[v] = static_cast<uint8_t>(255 - v);
  apply_lut(img, lut);
}

void gaussian_blur(cv::Mat& img, std::array<int, 2> kernel_size, std::array<double, 2> sigma) {
  // torch convolves in float32 and rounds half to even, as the conversion back does here;
  // BORDER_REFLECT_101 is torch's "reflect" padding, ISOLATED because the pixels around a
  // view are not the image's.
  cv::Mat blurred;
  cv::sepFilter2D(img, blurred, CV_32F, gaussian_kernel(kernel_size[0], sigma[0]),
                  gaussian_kernel(kernel_size[1], sigma[1]), cv::Point(-1, -1), 0,
                  cv::BORDER_REFLECT_101 | cv::BORDER_ISOLATED);
  blurred.convertTo(img, CV_8U);
}

void hflip(cv::Mat& img) { cv::flip(img, img, 1); }

void vflip(cv::Mat& img) { cv::flip(img, img, 0); }

}  // namespace forkfeed::fn
