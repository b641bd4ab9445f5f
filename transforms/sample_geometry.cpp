// Following an image's geometry with its mask: the crops, nearest resizes and the flips
// before any warp composed into one source row and column per output pixel, then the
// remaining moves.
#include "transforms/sample_geometry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>

namespace forkfeed {
namespace {

// Maps each output coordinate of the steps along one axis to its source coordinate in the
// mask: every crop adds its offset, every resize picks its nearest source.
void compose(std::vector<int>& source, int length, const std::vector<GeometryStep>& steps, bool columns) {
  source.resize(static_cast<std::size_t>(length));
  std::iota(source.begin(), source.end(), 0);
  std::vector<int> next;
  for (const GeometryStep& s : steps) {
    const int offset = columns ? s.x : s.y;
    const int in = columns ? s.width : s.height;
    const int out = columns ? s.out_width : s.out_height;
    next.resize(static_cast<std::size_t>(out));
    for (int i = 0; i < out; ++i) next[i] = source[offset + nearest_source(i, in, out)];
    source.swap(next);
  }
}

// out(y, x) = mask(rows[y], columns[x]). The tables and sizes are read into locals: a store
// of a byte may alias anything, which would make the compiler read them again per pixel.
template <typename T>
void gather(const cv::Mat& mask, const std::vector<int>& row_table, const std::vector<int>& column_table,
            cv::Mat& out) {
  const int* const rows = row_table.data();
  const int* const columns = column_table.data();
  const int height = out.rows, width = out.cols;
  for (int y = 0; y < height; ++y) {
    T* to = out.ptr<T>(y);
    if (y > 0 && rows[y] == rows[y - 1]) {  // an enlarging resize repeats the row
      std::memcpy(to, out.ptr<T>(y - 1), width * sizeof(T));
      continue;
    }
    const T* in = mask.ptr<T>(rows[y]);
    for (int x = 0; x < width; ++x) to[x] = in[columns[x]];
  }
}

}  // namespace

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
  if (mask.depth() == CV_16U) {
    gather<std::uint16_t>(mask, rows, columns, out);
  } else {
    gather<std::uint8_t>(mask, rows, columns, out);
  }
  const auto f = static_cast<float>(fill);
  for (; move != g.moves.end(); ++move) fn::repeat(out, *move, {f, f, f});
}

}  // namespace forkfeed
