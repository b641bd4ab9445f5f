// The dataset digest: what a state records of the index it was taken on, so that a
// resume on another file list, order or labels is refused (invariant 4).
#pragma once

#include <cstddef>
#include <string>

#include "forkfeed/dataset.h"

namespace forkfeed {

// The length of a digest, in lowercase hex digits.
inline constexpr std::size_t kDigestDigits = 16;

// FNV-1a 64 over every path (as stored, with its length) and label, in index order;
// one pass over the packed paths, about 0.1 s for ImageNet's 1.28M samples. For a
// sharded dataset: over the shards' paths and sizes, then every sample's slice and
// label. It detects a changed file list, order, labels or shard layout, not changed
// file contents of the same size.
std::string dataset_digest(const DatasetIndex& index);

}  // namespace forkfeed
