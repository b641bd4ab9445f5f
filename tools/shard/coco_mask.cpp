// COCO's run-length masks and polygons (tools/shard/coco_mask.h), in pycocotools' arithmetic.
#include "tools/shard/coco_mask.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace forkfeed {

RunLengths rle_from_polygon(std::span<const double> xy, int height, int width) {
  constexpr double kScale = 5;  // the boundary is traced at 5x
  const std::size_t corners = xy.size() / 2;
  const auto h = static_cast<std::int64_t>(height), w = static_cast<std::int64_t>(width);
  // The corners at 5x, rounded as (int)(5 x + .5), the first repeated at the end.
  std::vector<int> cx(corners + 1), cy(corners + 1);
  for (std::size_t j = 0; j < corners; ++j) {
    cx[j] = static_cast<int>(kScale * xy[2 * j] + .5);
    cy[j] = static_cast<int>(kScale * xy[2 * j + 1] + .5);
  }
  if (corners > 0) cx[corners] = cx[0], cy[corners] = cy[0];
  // Every point of each edge, one step along its longer axis at a time, always walked from
  // its lower end along that axis.
  std::vector<int> u, v;
  for (std::size_t j = 0; j < corners; ++j) {
    int xs = cx[j], xe = cx[j + 1], ys = cy[j], ye = cy[j + 1];
    const int dx = std::abs(xe - xs), dy = std::abs(ys - ye);
    const bool along_x = dx >= dy;
    const bool flip = along_x ? xs > xe : ys > ye;
    if (flip) std::swap(xs, xe), std::swap(ys, ye);
    const double slope = along_x ? static_cast<double>(ye - ys) / dx : static_cast<double>(xe - xs) / dy;
    const int steps = along_x ? dx : dy;
    for (int d = 0; d <= steps; ++d) {
      const int t = flip ? steps - d : d;
      if (along_x) {
        u.push_back(t + xs);
        v.push_back(static_cast<int>(ys + slope * t + .5));
      } else {
        v.push_back(t + ys);
        u.push_back(static_cast<int>(xs + slope * t + .5));
      }
    }
  }
  // Where the boundary crosses a column's centre, back at 1x: the row a run starts or ends at.
  std::vector<std::uint32_t> ends;
  for (std::size_t j = 1; j < u.size(); ++j) {
    if (u[j] == u[j - 1]) continue;
    const double x = (static_cast<double>(u[j] < u[j - 1] ? u[j] : u[j] - 1) + .5) / kScale - .5;
    if (std::floor(x) != x || x < 0 || x > static_cast<double>(w - 1)) continue;
    double y = (static_cast<double>(std::min(v[j], v[j - 1])) + .5) / kScale - .5;
    y = std::ceil(std::clamp(y, 0.0, static_cast<double>(h)));
    ends.push_back(
        static_cast<std::uint32_t>(static_cast<std::int64_t>(x) * h + static_cast<std::int64_t>(y)));
  }
  ends.push_back(static_cast<std::uint32_t>(h * w));
  std::sort(ends.begin(), ends.end());
  // The ends as counts of alternating runs; a run of 0 joins its neighbours.
  RunLengths counts;
  std::uint32_t previous = 0;
  for (std::size_t j = 0; j < ends.size(); ++j) {
    const std::uint32_t run = ends[j] - previous;
    previous = ends[j];
    if (j == 0 || run > 0) {
      counts.push_back(run);
    } else if (++j < ends.size()) {  // an empty run: the one after it adds to the one before
      counts.back() += ends[j] - previous;
      previous = ends[j];
    }
  }
  return counts;
}

Result<RunLengths> rle_from_string(std::string_view text) {
  RunLengths counts;
  std::size_t p = 0;
  while (p < text.size()) {
    std::int64_t x = 0;
    int shift = 0;
    for (bool more = true; more; ++p, shift += 5) {
      if (p == text.size() || text[p] < 48 || text[p] > 111 || shift > 55) {
        return Status::BadData(
            "its RLE counts are no compressed RLE string (characters '0' to 'o', 6 bits each)");
      }
      const int c = text[p] - 48;
      x |= static_cast<std::int64_t>(c & 0x1f) << shift;
      more = (c & 0x20) != 0;
      if (!more && (c & 0x10) != 0) x |= -(std::int64_t{1} << (shift + 5));  // negative: sign-extend
    }
    if (counts.size() > 2) x += counts[counts.size() - 2];
    if (x < 0 || x > std::numeric_limits<std::uint32_t>::max()) {
      return Status::BadData("its RLE counts decode to " + std::to_string(x) + ", not a count of pixels");
    }
    counts.push_back(static_cast<std::uint32_t>(x));
  }
  return counts;
}

Status paint(const RunLengths& counts, cv::Mat& mask, int value) {
  const auto h = static_cast<std::uint64_t>(mask.rows), w = static_cast<std::uint64_t>(mask.cols);
  std::uint64_t sum = 0;
  for (const std::uint32_t c : counts) sum += c;
  if (sum != h * w) {
    return Status::BadData("its RLE counts cover " + std::to_string(sum) + " pixels, its " +
                           std::to_string(w) + "x" + std::to_string(h) + " image " + std::to_string(h * w));
  }
  std::uint64_t at = 0;
  for (std::size_t j = 0; j < counts.size(); ++j) {
    const std::uint64_t end = at + counts[j];
    for (std::uint64_t i = (j % 2 == 1) ? at : end; i < end; ++i) {  // odd runs are 1s
      const int y = static_cast<int>(i % h), x = static_cast<int>(i / h);
      if (mask.depth() == CV_16U) {
        mask.at<std::uint16_t>(y, x) = static_cast<std::uint16_t>(value);
      } else {
        mask.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>(value);
      }
    }
    at = end;
  }
  return Status::Ok();
}

}  // namespace forkfeed
