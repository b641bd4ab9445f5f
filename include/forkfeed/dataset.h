// DatasetIndex: the list of samples (file path, label) a loader reads, built from an
// ImageFolder tree (torchvision's rules) or from a manifest file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/status.h"

namespace forkfeed {

class DatasetIndex {
 public:
  // torchvision ImageFolder: classes are the sorted names of root's subdirectories, a
  // label is the class's position; files are found recursively under each class,
  // sorted, and kept when their extension (any case) is one of .jpg .jpeg .png .ppm
  // .bmp .pgm .tif .tiff .webp.
  static Result<DatasetIndex> from_image_folder(const std::string& root);
  // Lines "relative/path<TAB>label", paths relative to the manifest's folder; blank
  // lines and lines starting with '#' are ignored.
  static Result<DatasetIndex> from_manifest(const std::string& manifest);

  std::size_t size() const { return labels_.size(); }
  std::string_view path(std::size_t i) const {
    return std::string_view(paths_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  std::int64_t label(std::size_t i) const { return labels_[i]; }
  // Class names by label; empty for a manifest.
  const std::vector<std::string>& classes() const { return classes_; }
  // Bytes of all paths together (what the index costs in the arena).
  std::size_t path_bytes() const { return paths_.size(); }

 private:
  friend class DatasetIndexBuilder;
  std::string paths_;                  // all paths, back to back
  std::vector<std::uint64_t> offsets_{0};  // path i is paths_[offsets_[i], offsets_[i+1])
  std::vector<std::int64_t> labels_;
  std::vector<std::string> classes_;
};

}  // namespace forkfeed
