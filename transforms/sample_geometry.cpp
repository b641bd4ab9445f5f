// Following an image's geometry with its mask — the crops, nearest resizes and the flips
// before any warp composed into one source row and column per output pixel, then the
// remaining moves — and with its boxes, step by step as torchvision.transforms.v2 does.
#include "transforms/sample_geometry.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>

namespace forkfeed {
namespace {

constexpr int kPadding = -1;  // a source coordinate past the mask's edges: the fill

// Maps each output coordinate of the steps along one axis to its source coordinate in the
// mask: every crop adds its offset (kPadding past the view's edges), every resize picks
// its nearest source.
void compose(std::vector<int>& source, int length, const std::vector<GeometryStep>& steps, bool columns) {
  source.resize(static_cast<std::size_t>(length));
  std::iota(source.begin(), source.end(), 0);
  std::vector<int> next;
  for (const GeometryStep& s : steps) {
    const int offset = columns ? s.x : s.y;
    const int in = columns ? s.width : s.height;
    const int out = columns ? s.out_width : s.out_height;
    const int view = static_cast<int>(source.size());
    next.resize(static_cast<std::size_t>(out));
    for (int i = 0; i < out; ++i) {
      const int at = offset + nearest_source(i, in, out);  // in the view, or past its edges
      next[i] = at >= 0 && at < view ? source[at] : kPadding;
    }
    source.swap(next);
  }
}

// out(y, x) = mask(rows[y], columns[x]) for the columns [first, last) — `fill` for the rest
// and for rows that are kPadding (a crop's padding is at the ends of a row: the crop is one
// range, resizes and flips keep it one). The tables and sizes are read into locals: a store
// of a byte may alias anything, which would make the compiler read them again per pixel.
template <typename T>
void gather(const cv::Mat& mask, const std::vector<int>& row_table, const std::vector<int>& column_table,
            int first, int last, T fill, cv::Mat& out) {
  static_assert(std::endian::native == std::endian::little);
  constexpr int kLanes = 8 / sizeof(T);
  const int* const rows = row_table.data();
  const int* const columns = column_table.data();
  const int height = out.rows, width = out.cols;
  for (int y = 0; y < height; ++y) {
    T* to = out.ptr<T>(y);
    if (y > 0 && rows[y] == rows[y - 1]) {  // an enlarging resize repeats the row
      std::memcpy(to, out.ptr<T>(y - 1), width * sizeof(T));
      continue;
    }
    if (rows[y] == kPadding) {
      std::fill(to, to + width, fill);
      continue;
    }
    std::fill(to, to + first, fill);
    std::fill(to + last, to + width, fill);
    const T* in = mask.ptr<T>(rows[y]);
    int x = first;
    // Eight bytes assembled in a register and stored at once: twice as fast as a store a
    // pixel, which is what the loop waits on.
    for (; x + kLanes <= last; x += kLanes) {
      std::uint64_t lanes = 0;
      for (int k = 0; k < kLanes; ++k) lanes |= std::uint64_t{in[columns[x + k]]} << (8 * sizeof(T) * k);
      std::memcpy(to + x, &lanes, sizeof lanes);
    }
    for (; x < last; ++x) to[x] = in[columns[x]];
  }
}

// `v` clamped to [0, most]; NaN stays NaN, as torch.clamp leaves it.
float clamp_to(float v, float most) { return v < 0.0f ? 0.0f : (v > most ? most : v); }

void clamp_boxes(std::span<Box> boxes, int width, int height) {
  const auto w = static_cast<float>(width), h = static_cast<float>(height);
  for (Box& b : boxes) b = {clamp_to(b[0], w), clamp_to(b[1], h), clamp_to(b[2], w), clamp_to(b[3], h)};
}

// A move's kernel on boxes, on a width x height image.
void move_boxes(std::span<Box> boxes, const fn::Move& move, int width, int height) {
  const auto w = static_cast<float>(width), h = static_cast<float>(height);
  switch (move.kind) {
    case fn::Move::Kind::kHflip:
      for (Box& b : boxes) b = {w - b[2], b[1], w - b[0], b[3]};
      return;
    case fn::Move::Kind::kVflip:
      for (Box& b : boxes) b = {b[0], h - b[3], b[2], h - b[1]};
      return;
    case fn::Move::Kind::kAffine: {
      // torch.tensor(matrix, dtype=float32): each corner [x, y, 1] @ matrix.T in float32.
      const std::array<double, 6> md = fn::affine_matrix(move.affine, width, height);
      std::array<float, 6> m;
      std::transform(md.begin(), md.end(), m.begin(), [](double v) { return static_cast<float>(v); });
      for (Box& b : boxes) {
        const std::array<std::array<float, 2>, 4> corners{
            {{b[0], b[1]}, {b[2], b[1]}, {b[2], b[3]}, {b[0], b[3]}}};
        Box out{INFINITY, INFINITY, -INFINITY, -INFINITY};
        bool nan = false;
        for (const auto& [x, y] : corners) {
          const float tx = x * m[0] + y * m[1] + m[2], ty = x * m[3] + y * m[4] + m[5];
          nan = nan || std::isnan(tx) || std::isnan(ty);
          out = {std::min(out[0], tx), std::min(out[1], ty), std::max(out[2], tx), std::max(out[3], ty)};
        }
        b = nan ? Box{NAN, NAN, NAN, NAN} : out;  // aminmax propagates NaN
      }
      return;
    }
  }
}

}  // namespace

Box to_xyxy(Box b, BoxFormat format, bool normalized, cv::Size size) {
  if (normalized) {
    const auto w = static_cast<float>(size.width), h = static_cast<float>(size.height);
    b = {b[0] * w, b[1] * h, b[2] * w, b[3] * h};
  }
  switch (format) {
    case BoxFormat::kXyxy: return b;
    case BoxFormat::kXywh: return {b[0], b[1], b[0] + b[2], b[1] + b[3]};
    case BoxFormat::kCxcywh: {
      const float x1 = b[0] - std::abs(b[2] / -2.0f), y1 = b[1] - std::abs(b[3] / -2.0f);
      return {x1, y1, x1 + b[2], y1 + b[3]};
    }
  }
  return b;
}

cv::Size output_size(const SampleGeometry& g) {
  if (g.steps.empty()) return {g.width, g.height};
  return {g.steps.back().out_width, g.steps.back().out_height};
}

void follow_step(const GeometryStep& s, std::span<Box> boxes) {
  const auto x = static_cast<float>(s.x), y = static_cast<float>(s.y);
  if (s.centred_boxes_only) {
    // v2.RandomIoUCrop: 0.5 * (x1 + x2) strictly inside the crop, in float32.
    const float right = x + static_cast<float>(s.width), bottom = y + static_cast<float>(s.height);
    for (Box& b : boxes) {
      const float cx = 0.5f * (b[0] + b[2]), cy = 0.5f * (b[1] + b[3]);
      if (!(x < cx && cx < right && y < cy && cy < bottom)) b = {NAN, NAN, NAN, NAN};
    }
  }
  for (Box& b : boxes) b = {b[0] - x, b[1] - y, b[2] - x, b[3] - y};
  clamp_boxes(boxes, s.width, s.height);
  if (!s.resizes()) return;
  // torch.tensor([w_ratio, h_ratio, ...]) of Python floats: float32 ratios.
  const auto rw = static_cast<float>(static_cast<double>(s.out_width) / s.width);
  const auto rh = static_cast<float>(static_cast<double>(s.out_height) / s.height);
  for (Box& b : boxes) b = {b[0] * rw, b[1] * rh, b[2] * rw, b[3] * rh};
  clamp_boxes(boxes, s.out_width, s.out_height);
}

void follow_boxes(const SampleGeometry& g, std::span<Box> boxes) {
  for (const GeometryStep& s : g.steps) follow_step(s, boxes);
  // A box the crops left without area (or that had none) covers no pixel: NaN, so that no
  // warp's envelope gives it one.
  for (Box& b : boxes) {
    if (!(b[2] > b[0] && b[3] > b[1])) b = {NAN, NAN, NAN, NAN};
  }
  const cv::Size size = output_size(g);
  for (const fn::Move& m : g.moves) {
    // Before a warp, what sanitising would drop (under a pixel across, under a square
    // pixel) is dropped: the warp's envelope would give it a size where no object is.
    if (m.kind == fn::Move::Kind::kAffine) {
      for (Box& b : boxes) {
        if (!keeps_box(b, size)) b = {NAN, NAN, NAN, NAN};
      }
    }
    move_boxes(boxes, m, size.width, size.height);
    clamp_boxes(boxes, size.width, size.height);
  }
}

bool keeps_box(const Box& b, cv::Size size) {
  const float w = b[2] - b[0], h = b[3] - b[1];
  const auto width = static_cast<float>(size.width), height = static_cast<float>(size.height);
  return w >= 1.0f && h >= 1.0f && w * h >= 1.0f && b[0] >= 0.0f && b[1] >= 0.0f && b[2] >= 0.0f &&
         b[3] >= 0.0f && b[0] <= width && b[2] <= width && b[1] <= height && b[3] <= height;
}

int nearest_source(int i, int in, int out) {
  if (in == out) return i;
  if (out == 2 * in) return i >> 1;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  return std::min(static_cast<int>(std::floor(static_cast<float>(i) * scale)), in - 1);
}

int last_source_row(const SampleGeometry& g) {
  thread_local std::vector<int> rows;
  compose(rows, g.height, g.steps, false);
  return rows.empty() ? -1 : *std::max_element(rows.begin(), rows.end());
}

void follow(const SampleGeometry& g, const cv::Mat& mask, double fill, cv::Mat& out) {
  thread_local std::vector<int> rows, columns;  // reused across samples
  compose(rows, g.height, g.steps, false);
  compose(columns, g.width, g.steps, true);
  CV_Assert(out.rows == static_cast<int>(rows.size()) && out.cols == static_cast<int>(columns.size()) &&
            out.type() == mask.type());
  // Flips before the first warp only reorder the rows or columns the gather reads.
  auto move = g.moves.begin();
  for (; move != g.moves.end() && move->kind != fn::Move::Kind::kAffine; ++move) {
    std::vector<int>& order = move->kind == fn::Move::Kind::kHflip ? columns : rows;
    std::reverse(order.begin(), order.end());
  }
  const auto shown = [](int c) { return c != kPadding; };
  const int first = static_cast<int>(std::find_if(columns.begin(), columns.end(), shown) - columns.begin());
  const int last = static_cast<int>(columns.rend() - std::find_if(columns.rbegin(), columns.rend(), shown));
  if (mask.depth() == CV_16U) {
    gather(mask, rows, columns, first, std::max(first, last), cv::saturate_cast<std::uint16_t>(fill), out);
  } else {
    gather(mask, rows, columns, first, std::max(first, last), cv::saturate_cast<std::uint8_t>(fill), out);
  }
  const auto f = static_cast<float>(fill);
  for (; move != g.moves.end(); ++move) fn::repeat(out, *move, {f, f, f});
}

}  // namespace forkfeed
