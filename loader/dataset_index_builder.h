// DatasetIndexBuilder: how from_image_folder and from_manifest fill a DatasetIndex. Paths
// go straight into the packed storage; ImageNet's 1.28M files cost no allocation per file.
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
    return std::move(index_);
  }

 private:
  DatasetIndex index_;
};

}  // namespace forkfeed
