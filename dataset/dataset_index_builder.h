// DatasetIndexBuilder: how the dataset sources fill a DatasetIndex. Paths go straight
// into the packed storage; ImageNet's 1.28M files cost no allocation per file, and a
// sharded dataset's samples are 16-byte slices with no path at all.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forkfeed/dataset.h"

namespace forkfeed {

// Appends samples to a DatasetIndex's packed storage; the only writer of its fields.
class DatasetIndexBuilder {
 public:
  // Appends os.path.join(dir, name) with `label` and the file's size in `bytes`
  // (DatasetIndex::kUnknownBytes when it could not be stat'ed), without building the
  // path separately.
  void add(std::string_view dir, std::string_view name, std::int64_t label, std::uint64_t bytes) {
    std::string& paths = index_.paths_;
    if (!name.starts_with('/')) {  // os.path.join drops `dir` before an absolute name
      paths += dir;
      if (!dir.empty() && !dir.ends_with('/')) paths += '/';
    }
    paths += name;
    index_.offsets_.push_back(paths.size());
    index_.labels_.push_back(label);
    index_.sizes_.push_back(bytes);
    index_.contents_.push_back(0);
  }
  // File f of those added (a sample's), and what reading it found: its size and its
  // content digest (dataset/file_marks.h). Threads may mark different files at once.
  std::size_t file_count() const { return index_.file_count(); }
  std::string_view file(std::size_t f) const { return index_.file(f); }
  void mark(std::size_t f, std::uint64_t bytes, std::uint64_t content) {
    index_.sizes_[f] = bytes;
    index_.contents_[f] = content;
  }
  // How the files' or shards' contents were read.
  void set_content_check(ContentCheck check) { index_.content_check_ = check; }
  // DatasetIndex::root(): the folder an ImageFolder or a manifest names its files from.
  // A sharded dataset's is found by finish().
  void set_root(std::string root) { index_.root_ = std::move(root); }
  // A sharded dataset: adds shard `path`, as `stamp` says it was when it was indexed and
  // `content` digests it (ShardScan::content); returns its file number.
  std::uint32_t add_shard(std::string_view path, const FileStamp& stamp, std::uint64_t content = 0) {
    index_.paths_ += path;
    index_.offsets_.push_back(index_.paths_.size());
    index_.shard_stamps_.push_back(stamp);
    index_.contents_.push_back(content);
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
    index_.field_slices_.reserve(samples * index_.columns_.extra_members());
    index_.field_labels_.reserve(samples * index_.columns_.extra_labels());
    index_.field_numbers_.reserve(samples * index_.columns_.numbers);
  }
  // A sharded dataset with fields: the fields its samples have, and where each is kept
  // (dataset/sample_schema.h: field_columns(fields)). Before reserve_slices and add_slice.
  void set_fields(std::vector<FieldSpec> fields, FieldColumns columns) {
    index_.fields_ = std::move(fields);
    index_.columns_ = std::move(columns);
  }
  // The columns of samples added with add_slice beyond their slice and label, sample
  // after sample as FieldColumns lays them out; appended in runs of whole samples.
  void add_field_columns(std::span<const FieldSlice> slices, std::span<const std::int64_t> labels,
                         std::span<const double> numbers) {
    index_.field_slices_.insert(index_.field_slices_.end(), slices.begin(), slices.end());
    index_.field_labels_.insert(index_.field_labels_.end(), labels.begin(), labels.end());
    index_.field_numbers_.insert(index_.field_numbers_.end(), numbers.begin(), numbers.end());
  }
  // The next shard's samples whose names are longer than their tar headers hold, by their
  // position among its samples, which are added from sample `first` on.
  void add_name_headers(std::span<const NameHeaders> headers, std::uint64_t first) {
    for (const NameHeaders& h : headers) index_.name_headers_.push_back({first + h.sample, h.bytes});
  }
  // With fields: the longest key of any sample, and each field's array shape (by field).
  void set_keys(std::uint32_t longest_key) { index_.longest_key_ = longest_key; }
  void set_array_shapes(std::vector<ArrayFieldShape> shapes) { index_.array_shapes_ = std::move(shapes); }
  void reserve(std::size_t samples, std::size_t path_bytes) {
    index_.paths_.reserve(path_bytes);
    index_.offsets_.reserve(samples + 1);
    index_.labels_.reserve(samples);
    index_.sizes_.reserve(samples);
    index_.contents_.reserve(samples);
  }
  void set_classes(std::vector<std::string> classes) { index_.classes_ = std::move(classes); }
  std::size_t size() const { return index_.labels_.size(); }

  // Growth by doubling can leave half of ImageNet's tens of MB of paths unused; trim
  // it before the index is kept for the whole run.
  DatasetIndex finish() && {
    index_.paths_.shrink_to_fit();
    index_.offsets_.shrink_to_fit();
    index_.labels_.shrink_to_fit();
    index_.sizes_.shrink_to_fit();
    index_.contents_.shrink_to_fit();
    index_.slices_.shrink_to_fit();
    index_.field_slices_.shrink_to_fit();
    index_.field_labels_.shrink_to_fit();
    index_.field_numbers_.shrink_to_fit();
    index_.name_headers_.shrink_to_fit();
    if (index_.sharded() && index_.root_.empty()) index_.root_ = common_folder();
    return std::move(index_);
  }

 private:
  // The deepest folder holding every file (they are absolute): "/data/x" for
  // /data/x/a.tar and /data/x/y/b.tar.
  std::string common_folder() const {
    std::string_view common = index_.file(0).substr(0, index_.file(0).rfind('/') + 1);
    for (std::size_t f = 1; f < index_.file_count(); ++f) {
      const std::string_view path = index_.file(f);
      while (common.size() > 1 && !path.starts_with(common))
        common = common.substr(0, common.rfind('/', common.size() - 2) + 1);
    }
    if (common.size() > 1) common.remove_suffix(1);  // "/data/x/" -> "/data/x"; "/" stays
    return std::string(common);
  }

  DatasetIndex index_;
};

}  // namespace forkfeed
