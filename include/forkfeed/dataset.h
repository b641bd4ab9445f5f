// DatasetIndex: the list of samples a loader reads — where each one's bytes are, and its
// label — built from an ImageFolder tree (torchvision's rules) or a manifest file (a
// file per sample), or from tar shards (a slice of a shard per sample, no path each).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/status.h"

namespace forkfeed {

// Where a sample's bytes are: the whole of `file`, or (`sliced`) `size` bytes at `offset`
// in it, a member of a tar shard.
struct SampleSource {
  std::string_view file;
  bool sliced = false;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

class DatasetIndex {
 public:
  // A sample of a sharded dataset: `size` bytes at `offset` of file `file` (a shard).
  struct Slice {
    std::uint64_t offset = 0;
    std::uint32_t file = 0;
    std::uint32_t size = 0;
    bool operator==(const Slice&) const = default;
  };

  // torchvision ImageFolder: classes are the sorted names of root's subdirectories, a
  // label is the class's position; files are found recursively under each class,
  // sorted, and kept when their extension (any case) is one of .jpg .jpeg .png .ppm
  // .bmp .pgm .tif .tiff .webp.
  static Result<DatasetIndex> from_image_folder(const std::string& root);
  // Lines "relative/path<TAB>label", paths relative to the manifest's folder; blank
  // lines and lines starting with '#' are ignored.
  static Result<DatasetIndex> from_manifest(const std::string& manifest);

  std::size_t size() const { return labels_.size(); }
  // The file sample i is read from: its own, or its shard.
  std::string_view path(std::size_t i) const { return file(sharded() ? slices_[i].file : i); }
  SampleSource source(std::size_t i) const {
    if (!sharded()) return {file(i), false, 0, 0};
    const Slice& s = slices_[i];
    return {file(s.file), true, s.offset, s.size};
  }
  // What messages call sample i: its path, or "<shard> (sample at byte <offset>)".
  std::string describe(std::size_t i) const;
  std::int64_t label(std::size_t i) const { return labels_[i]; }

  // Files: one per sample, or the shards.
  std::size_t file_count() const { return offsets_.size() - 1; }
  std::string_view file(std::size_t f) const {
    return std::string_view(paths_).substr(offsets_[f], offsets_[f + 1] - offsets_[f]);
  }
  // Whether samples are slices of shards; then slices() has one per sample, and
  // shard_bytes() the size of each shard when it was indexed.
  bool sharded() const { return !slices_.empty(); }
  const std::vector<Slice>& slices() const { return slices_; }
  const std::vector<std::uint64_t>& shard_bytes() const { return shard_bytes_; }
  // Class names by label; empty for a manifest.
  const std::vector<std::string>& classes() const { return classes_; }
  // Bytes of all file paths together (with slices(), what the index costs in the arena).
  std::size_t path_bytes() const { return paths_.size(); }

 private:
  friend class DatasetIndexBuilder;
  std::string paths_;                  // all paths, back to back
  std::vector<std::uint64_t> offsets_{0};  // file f is paths_[offsets_[f], offsets_[f+1])
  std::vector<Slice> slices_;              // sharded: sample i; else empty, sample i is file i
  std::vector<std::uint64_t> shard_bytes_;  // sharded: the size of file f
  std::vector<std::int64_t> labels_;
  std::vector<std::string> classes_;
};

}  // namespace forkfeed
