// DatasetIndex's fields: a sample's labels and numbers by field, which fields it lacks,
// and the bytes the largest batch of a member field takes.
#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <vector>

#include "forkfeed/dataset.h"

namespace forkfeed {

std::int64_t DatasetIndex::field_label(std::size_t i, std::size_t f) const {
  const std::uint32_t column = columns_.of[f].column;
  return column == 0 ? labels_[i] : field_labels_[i * columns_.extra_labels() + column - 1];
}

double DatasetIndex::field_number(std::size_t i, std::size_t f) const {
  return field_numbers_[i * columns_.numbers + columns_.of[f].column];
}

bool DatasetIndex::has_field(std::size_t i, std::size_t f) const {
  switch (columns_.of[f].store) {
    case FieldColumn::Store::kLabel: return field_label(i, f) != kMissingLabel;
    case FieldColumn::Store::kNumber: return !std::isnan(field_number(i, f));
    case FieldColumn::Store::kMember: break;
  }
  return field_slice(i, f).size != FieldSlice::kMissing;
}

std::optional<std::size_t> DatasetIndex::missing_field(std::size_t i) const {
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    if (!has_field(i, f)) return f;
  }
  return std::nullopt;
}

std::uint64_t DatasetIndex::largest_batch_bytes(std::size_t f, std::uint32_t batch_size) const {
  const std::size_t n = size();
  if (columns_.of[f].store != FieldColumn::Store::kMember)
    return std::uint64_t{8} * std::min<std::size_t>(n, batch_size);
  // The batch_size largest sizes so far, the least on top: one pass, batch_size held.
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> largest;
  for (std::size_t i = 0; i < n && batch_size > 0; ++i) {
    const std::uint32_t size = field_slice(i, f).size;
    const std::uint32_t bytes = size == FieldSlice::kMissing ? 0 : size;
    if (largest.size() < batch_size) {
      largest.push(bytes);
    } else if (bytes > largest.top()) {
      largest.pop();
      largest.push(bytes);
    }
  }
  std::uint64_t sum = 0;
  for (; !largest.empty(); largest.pop()) sum += largest.top();
  return sum;
}

}  // namespace forkfeed
