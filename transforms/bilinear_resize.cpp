// bilinear_resize: OpenCV 4's INTER_LINEAR arithmetic for 8-bit images, written out.
//
// For each output column d: f = (float)((d + 0.5) * scale - 0.5), s = floor(f), f -= s,
// with s < 0 and s >= width - 1 clamped to the edge and f to 0; the weights are
// rint((1 - f) * 2048) and rint(f * 2048). Rows take the same (f and s of the row),
// their two source rows clipped into the image, the weights kept. The row pass gives
// the exact int32 S[s] * a0 + S[s + 1] * a1 of each value; the column pass blends two of
// them as OpenCV's vector code does for every value: ((r0 >> 4) * b0 >> 16) +
// ((r1 >> 4) * b1 >> 16), then (+ 2) >> 2, saturated to uint8.
#include "transforms/bilinear_resize.h"

#include "base/cpu_features.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace forkfeed {
namespace {

// Whether cv::resize takes another path than the two passes for these sizes: a copy, or
// its area averaging for an exact halving of both sides.
bool opencv_takes_another_path(cv::Size from, cv::Size to) {
  if (from == to) return true;
  const double scale_x = 1.0 / (static_cast<double>(to.width) / from.width);
  const double scale_y = 1.0 / (static_cast<double>(to.height) / from.height);
  const int whole_x = cv::saturate_cast<int>(scale_x), whole_y = cv::saturate_cast<int>(scale_y);
  return std::abs(scale_x - whole_x) < DBL_EPSILON && std::abs(scale_y - whole_y) < DBL_EPSILON &&
         whole_x == 2 && whole_y == 2;
}

#if defined(__x86_64__) && defined(__GNUC__)

constexpr int kWeightScale = 2048;  // OpenCV's INTER_RESIZE_COEF_SCALE

// One axis's taps: for each output position, the first source position and the two weights.
struct Taps {
  std::vector<int> first;
  std::vector<int16_t> weight;  // two per position
};

void make_taps(int source, int output, bool clamp_to_edge, Taps& taps) {
  const double scale = 1.0 / (static_cast<double>(output) / source);
  taps.first.resize(static_cast<std::size_t>(output));
  taps.weight.resize(2 * static_cast<std::size_t>(output));
  for (int d = 0; d < output; ++d) {
    float f = static_cast<float>((d + 0.5) * scale - 0.5);
    int s = static_cast<int>(std::floor(f));
    f -= static_cast<float>(s);
    if (clamp_to_edge && s < 0) f = 0, s = 0;
    if (clamp_to_edge && s >= source - 1) f = 0, s = source - 1;
    taps.first[d] = s;
    taps.weight[2 * d] = static_cast<int16_t>(std::lrint((1.0f - f) * kWeightScale));
    taps.weight[2 * d + 1] = static_cast<int16_t>(std::lrint(f * kWeightScale));
  }
}

// The row pass's plan, the same for every row: each group of eight output values is two
// lanes of four, each lane loading 16 source bytes from its offset and shuffling them into
// (S[s], S[s + 1]) int16 pairs for one multiply-add with the pairs' weights. Four values
// span two output pixels, so a lane's bytes fit in 16 while a step is 4 pixels or less.
// The groups whose 16 bytes would run past the row's end read a copy of its last
// kTailBytes instead (the bytes past the end, zeros, are never picked). From the first
// group that fits neither way on, and for the last values short of a group, one value
// at a time.
constexpr int kTailBytes = 64;

struct RowGroup {
  std::array<int8_t, 32> shuffle;
  std::array<int32_t, 8> weights;
  std::array<int, 2> offset;  // of each lane's 16 bytes in the row (or in the tail's copy)
};
struct RowPlan {
  std::vector<RowGroup> groups;
  std::size_t in_row = 0;  // the groups before this read the row; the rest the tail's copy
  int tail_at = 0;         // where in the row the copy starts
};

__attribute__((target("avx2"))) void plan_rows(const Taps& x, int source_width, int output_width,
                                               RowPlan& plan) {
  const int values = 3 * output_width, row_bytes = 3 * source_width;
  plan.groups.clear();
  plan.in_row = 0;
  plan.tail_at = std::max(0, row_bytes - kTailBytes);
  bool in_tail = false;
  for (int g = 0; g + 8 <= values; g += 8) {
    RowGroup group;
    auto& [shuffle, weights, offsets] = group;
    for (int lane = 0; lane < 2; ++lane) {
      const int first = g + 4 * lane;
      // The lowest byte of the four (enlarging, a later value may start before the first).
      offsets[lane] = row_bytes;
      for (int k = 0; k < 4; ++k) {
        offsets[lane] = std::min(offsets[lane], 3 * x.first[(first + k) / 3] + (first + k) % 3);
      }
      if (offsets[lane] + 16 > row_bytes) in_tail = true;
      for (int k = 0; k < 4; ++k) {
        const int d = (first + k) / 3, c = (first + k) % 3;
        const int at0 = 3 * x.first[d] + c - offsets[lane];
        const int at1 = 3 * std::min(x.first[d] + 1, source_width - 1) + c - offsets[lane];
        if (at1 > 15) return;
        int8_t* bytes = shuffle.data() + 16 * lane + 4 * k;
        bytes[0] = static_cast<int8_t>(at0), bytes[1] = -1, bytes[2] = static_cast<int8_t>(at1),
        bytes[3] = -1;
        weights[4 * lane + k] = static_cast<int32_t>(static_cast<uint16_t>(x.weight[2 * d])) |
                                static_cast<int32_t>(static_cast<uint32_t>(x.weight[2 * d + 1]) << 16);
      }
    }
    if (in_tail) {
      for (int& offset : offsets) {
        offset -= plan.tail_at;
        if (offset < 0 || offset + 16 > 2 * kTailBytes) return;
      }
    }
    plan.groups.push_back(group);
    if (!in_tail) plan.in_row = plan.groups.size();
  }
}

// One group of the row pass: eight sums from the bytes at `from`.
__attribute__((target("avx2"), always_inline)) inline void blend_group(const uint8_t* from,
                                                                       const RowGroup& group, int32_t* out) {
  const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + group.offset[0]));
  const __m128i high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + group.offset[1]));
  const __m256i shuffle = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group.shuffle.data()));
  const __m256i weights = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group.weights.data()));
  const __m256i pairs =
      _mm256_shuffle_epi8(_mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1), shuffle);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_madd_epi16(pairs, weights));
}

// The row pass of one source row: 3 x output width exact sums.
__attribute__((target("avx2"))) void blend_columns(const uint8_t* row, const RowPlan& plan, const Taps& x,
                                                   int source_width, int values, int32_t* out) {
  const RowGroup* group = plan.groups.data();
  const std::size_t groups = plan.groups.size(), in_row = plan.in_row;
  std::size_t g = 0;
  for (; g < in_row; ++g) blend_group(row, group[g], out + 8 * g);
  if (g < groups) {
    alignas(32) std::array<uint8_t, 2 * kTailBytes> tail{};
    std::memcpy(tail.data(), row + plan.tail_at, static_cast<std::size_t>(3 * source_width - plan.tail_at));
    for (; g < groups; ++g) blend_group(tail.data(), group[g], out + 8 * g);
  }
  for (int j = static_cast<int>(8 * groups); j < values; ++j) {
    const int d = j / 3, c = j % 3;
    out[j] = row[3 * x.first[d] + c] * x.weight[2 * d] +
             row[3 * std::min(x.first[d] + 1, source_width - 1) + c] * x.weight[2 * d + 1];
  }
}

// Sixteen sums from `r`, each >> 4, as int16 (in the order _mm256_packs_epi32 leaves them).
__attribute__((target("avx2"), always_inline)) inline __m256i sixteen_sums(const int32_t* r) {
  return _mm256_packs_epi32(
      _mm256_srai_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r)), 4),
      _mm256_srai_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + 8)), 4));
}

// The column pass of one output row from its two source rows' sums.
__attribute__((target("avx2"))) void blend_rows(const int32_t* r0, const int32_t* r1, int16_t b0, int16_t b1,
                                                int values, uint8_t* out) {
  const __m256i w0 = _mm256_set1_epi16(b0), w1 = _mm256_set1_epi16(b1), two = _mm256_set1_epi16(2);
  int x = 0;
  for (; x + 32 <= values; x += 32) {
    __m256i halves[2];
    for (int h = 0; h < 2; ++h) {
      const __m256i sum = _mm256_add_epi16(_mm256_mulhi_epi16(sixteen_sums(r0 + x + 16 * h), w0),
                                           _mm256_mulhi_epi16(sixteen_sums(r1 + x + 16 * h), w1));
      halves[h] = _mm256_srai_epi16(_mm256_add_epi16(sum, two), 2);
    }
    // Both packs work within 128-bit halves: the permute puts the bytes back in order.
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(halves[0], halves[1]),
                                                      _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + x), bytes);
  }
  for (; x < values; ++x) {
    const int v = (((r0[x] >> 4) * b0) >> 16) + (((r1[x] >> 4) * b1) >> 16);
    out[x] = cv::saturate_cast<uint8_t>((v + 2) >> 2);
  }
}

// What two_passes reuses from call to call, one per thread: it allocates nothing once grown.
struct Scratch {
  Taps x, y;
  RowPlan plan;
  std::vector<int32_t> sums[2];
};
// Not inlined: the callers then work through one reference, not through the thread-local
// itself (whose address, in a shared library, is a call away at each use).
__attribute__((noinline)) Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

// The two passes, each source row's sums made once and kept while output rows need it.
void two_passes(const cv::Mat& from, cv::Mat& to) {
  Scratch& scratch = thread_scratch();
  auto& [x, y, plan, sums] = scratch;
  make_taps(from.cols, to.cols, true, x);
  make_taps(from.rows, to.rows, false, y);
  plan_rows(x, from.cols, to.cols, plan);
  const int values = 3 * to.cols;
  int held[2] = {-1, -1};  // the source row whose sums each buffer holds
  for (auto& buffer : sums) buffer.resize(static_cast<std::size_t>(values));
  for (int row = 0; row < to.rows; ++row) {
    const int wanted[2] = {std::clamp(y.first[row], 0, from.rows - 1),
                           std::clamp(y.first[row] + 1, 0, from.rows - 1)};
    const int32_t* rows[2];
    for (int k = 0; k < 2; ++k) {
      int buffer = held[0] == wanted[k] ? 0 : held[1] == wanted[k] ? 1 : -1;
      if (buffer < 0) {
        buffer = held[0] == wanted[1 - k] ? 1 : 0;  // keep the one the other row needs
        blend_columns(from.ptr<uint8_t>(wanted[k]), plan, x, from.cols, values, sums[buffer].data());
        held[buffer] = wanted[k];
      }
      rows[k] = sums[buffer].data();
    }
    blend_rows(rows[0], rows[1], y.weight[2 * row], y.weight[2 * row + 1], values, to.ptr<uint8_t>(row));
  }
}

#else
void two_passes(const cv::Mat&, cv::Mat&) {}
#endif

}  // namespace

void bilinear_resize(const cv::Mat& from, cv::Mat& to) {
  if (from.type() != CV_8UC3 || to.type() != CV_8UC3 || from.empty() || to.empty() || !cpu_has_avx2() ||
      opencv_takes_another_path(from.size(), to.size())) {
    cv::resize(from, to, to.size(), 0, 0, cv::INTER_LINEAR);
    return;
  }
  two_passes(from, to);
}

}  // namespace forkfeed
