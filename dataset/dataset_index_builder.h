// DatasetIndexBuilder: how the dataset sources fill a DatasetIndex. Paths go straight
// into the packed storage; ImageNet's 1.28M files cost no allocation per file, and a
// sharded dataset's samples are 16-byte slices with no path at all.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forkfeed/dataset.h"

namespace forkfeed {

// Appends samples to a DatasetIndex's packed storage; the only writer of its fields.
class DatasetIndexBuilder {
 public:
  // Appends os.path.join(dir, name) with `label`, without building it separately.
  void add(std::string_view dir, std::string_view name, std::int64_t label) {
    std::string& paths = index_.paths_;
    if (!name.starts_with('/')) {  // os.path.join drops `dir` before an absolute name
      paths += dir;
      if (!dir.empty() && !dir.ends_with('/')) paths += '/';
    }
    paths += name;
    index_.offsets_.push_back(paths.size());
    index_.labels_.push_back(label);
  }
  // A sharded dataset: adds shard `path`, as `stamp` says it was when it was indexed;
  // returns its file number.
  std::uint32_t add_shard(std::string_view path, const FileStamp& stamp) {
    index_.paths_ += path;
    index_.offsets_.push_back(index_.paths_.size());
    index_.shard_stamps_.push_back(stamp);
    return static_cast<std::uint32_t>(index_.shard_stamps_.size() - 1);
  }
  // Samples, and bytes of damaged shards, left out while indexing.
  void count_skipped(std::uint64_t samples, std::uint64_t bytes) {
    index_.skipped_samples_ += samples;
    index_.skipped_bytes_ += bytes;
  }
  // A sharded dataset's next sample: `slice` of a shard added before, with `label`.
  // REQUIRES: slice.size > 0; no add() in the same index.
  void add_slice(const DatasetIndex::Slice& slice, std::int64_t label) {
    index_.slices_.push_back(slice);
    index_.labels_.push_back(label);
  }
  void reserve_slices(std::size_t samples) {
    index_.slices_.reserve(samples);
    index_.labels_.reserve(samples);
  }
  void reserve(std::size_t samples, std::size_t path_bytes) {
    index_.paths_.reserve(path_bytes);
    index_.offsets_.reserve(samples + 1);
    index_.labels_.reserve(samples);
  }
  void set_classes(std::vector<std::string> classes) { index_.classes_ = std::move(classes); }
  std::size_t size() const { return index_.labels_.size(); }

  // Growth by doubling can leave half of ImageNet's tens of MB of paths unused; trim
  // it before the index is kept for the whole run.
  DatasetIndex finish() && {
    index_.paths_.shrink_to_fit();
    index_.offsets_.shrink_to_fit();
    index_.labels_.shrink_to_fit();
    index_.slices_.shrink_to_fit();
    return std::move(index_);
  }

 private:
  DatasetIndex index_;
};

}  // namespace forkfeed
