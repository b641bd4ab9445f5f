// DatasetIndex: the list of samples a loader reads — where each one's bytes are, and its
// label — built from an ImageFolder tree (torchvision's rules) or a manifest file (a
// file per sample), or from tar shards (a slice of a shard per sample, no path each;
// with fields, a sample's other members 8 bytes each, its labels and numbers).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/fields.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

// What a shard file was when it was indexed: which file it is (device, inode) and marks
// of its contents (size, modification and status-change times). Rewriting, replacing or
// touching the file changes its stamp; cp -p, rsync -t and touch can set the
// modification time back, but not the change time.
struct FileStamp {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// Where a sample's bytes are: the whole of `file`, or (`sliced`) `size` bytes at `offset`
// in it, a member of a tar shard whose stamp was `stamp` when it was indexed.
struct SampleSource {
  std::string_view file;
  bool sliced = false;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  FileStamp stamp = {};
};

// A sample of a sharded dataset: `size` bytes at `offset` of file `file` (a shard).
struct SampleSlice {
  std::uint64_t offset = 0;
  std::uint32_t file = 0;
  std::uint32_t size = 0;
  bool operator==(const SampleSlice&) const = default;
};

// A member of a sample other than its own slice (SampleSlice): one of its fields'
// members, `size` bytes at `offset` from the sample's slice offset (negative when the
// member comes first in the shard). 8 bytes a field a sample.
struct FieldSlice {
  // The size of a member the sample lacks (missing=skip or empty); no member is this
  // large (a member field is bounded by max_file_bytes, and by 4 GiB - 2).
  static constexpr std::uint32_t kMissing = 0xffffffff;
  std::int32_t offset = 0;
  std::uint32_t size = kMissing;
  bool missing() const { return size == kMissing; }
  bool operator==(const FieldSlice&) const = default;
};
static_assert(sizeof(FieldSlice) == 8);

// A sharded sample whose member at its slice's offset has a name longer than its tar
// header holds (a GNU long name or a pax path before the header gives it): `bytes` of
// headers before the slice's data hold its name, and so its key. Every other sample's
// name is in the 512-byte header just before its slice (kTarHeaderBytes); only these are
// listed, so that an index of short names pays nothing for them.
struct NameHeaders {
  std::uint64_t sample = 0;
  std::uint64_t bytes = 0;
  bool operator==(const NameHeaders&) const = default;
};
inline constexpr std::uint64_t kTarHeaderBytes = 512;
// The most bytes of headers a sample's name may take (GNU long names and pax headers
// included); a sample whose name needs more is bad data, found while indexing.
inline constexpr std::uint64_t kMaxNameHeaderBytes = 64 * 1024;

// An array field's samples as the index found them while reading their .npy headers: all
// of one dtype, and of one shape (a dense field, [batch, *shape]) or not (`varies`: ragged).
struct ArrayFieldShape {
  ElementType dtype = ElementType::kUint8;
  bool varies = true;
  std::vector<std::int64_t> shape;  // when !varies
  bool operator==(const ArrayFieldShape&) const = default;
};

// A label field's value in a sample that lacks it (labels are non-negative); a number
// field's is NaN (std::isnan).
inline constexpr std::int64_t kMissingLabel = -1;

// Where a DatasetIndex keeps field f of its schema; dataset/sample_schema.h's
// field_columns() decides, for the shard scan, the index cache and the index alike.
struct FieldColumn {
  // kMember: a member the worker reads (image, text, bytes, array; a view shares the
  // column of the image it views). kLabel: an int64 read while indexing. kNumber: a
  // float64 read while indexing.
  enum class Store : std::uint8_t { kMember, kLabel, kNumber };
  Store store = Store::kMember;
  // kMember: 0 is the sample's own slice, k > 0 its FieldSlice k - 1. kLabel: 0 is the
  // index's label(i), k > 0 the label column k - 1 beyond it. kNumber: its column.
  std::uint32_t column = 0;
  bool operator==(const FieldColumn&) const = default;
};

struct FieldColumns {
  std::vector<FieldColumn> of;  // by field, in the schema's order
  std::uint32_t members = 0;    // member columns: the slice, and members - 1 FieldSlices
  std::uint32_t labels = 0;     // label columns: label(i), and labels - 1 more
  std::uint32_t numbers = 0;    // number columns
  std::uint32_t extra_members() const { return members > 0 ? members - 1 : 0; }
  std::uint32_t extra_labels() const { return labels > 0 ? labels - 1 : 0; }
  bool operator==(const FieldColumns&) const = default;
};

// The packed table of samples that a DatasetIndex holds and that the workers read from
// its copy in shared memory: file f's path is paths[offsets[f], offsets[f+1]); when
// sharded, sample i is slices[i] of the shard stamped stamps[slices[i].file], else file i.
// The one reader of that layout, for both.
// With fields, sample i's other members are field_slices[i * extra_members, (i + 1) *
// extra_members).
struct PackedSamples {
  std::string_view paths;
  std::span<const std::uint64_t> offsets;
  std::span<const SampleSlice> slices;
  std::span<const FileStamp> stamps;
  std::span<const FieldSlice> field_slices = {};
  std::uint32_t extra_members = 0;
  std::span<const NameHeaders> name_headers = {};  // by sample, ascending

  bool sharded() const { return !slices.empty(); }
  std::string_view file(std::size_t f) const { return paths.substr(offsets[f], offsets[f + 1] - offsets[f]); }
  // The file sample i is read from: its own, or its shard.
  std::string_view path(std::size_t i) const { return file(sharded() ? slices[i].file : i); }
  SampleSource source(std::size_t i) const {
    if (!sharded()) return {file(i), false, 0, 0, {}};
    const SampleSlice& s = slices[i];
    return {file(s.file), true, s.offset, s.size, stamps[s.file]};
  }
  // Member column `column` of sharded sample i (FieldColumn::column of a member field: 0
  // is its own slice, k > 0 its FieldSlice k - 1); size FieldSlice::kMissing (and the
  // offset the sample's) when the sample lacks it.
  SampleSlice member_slice(std::size_t i, std::uint32_t column) const {
    const SampleSlice& s = slices[i];
    if (column == 0) return s;
    const FieldSlice& m = field_slices[i * extra_members + column - 1];
    if (m.missing()) return {s.offset, s.file, FieldSlice::kMissing};
    return {static_cast<std::uint64_t>(static_cast<std::int64_t>(s.offset) + m.offset), s.file, m.size};
  }
  SampleSource member_source(std::size_t i, std::uint32_t column) const {
    const SampleSlice m = member_slice(i, column);
    return {file(m.file), true, m.offset, m.size, stamps[m.file]};
  }
  // Bytes of the tar headers just before sharded sample i's slice that hold the name of
  // its member there: kTarHeaderBytes, or its NameHeaders' bytes.
  std::uint64_t name_bytes(std::size_t i) const {
    const auto it = std::lower_bound(name_headers.begin(), name_headers.end(), i,
                                     [](const NameHeaders& h, std::size_t s) { return h.sample < s; });
    return it != name_headers.end() && it->sample == i ? it->bytes : kTarHeaderBytes;
  }
  // Those headers, whose name's key (WebDataset's: up to the first '.' of its last path
  // component) is the sample's key.
  SampleSource name_source(std::size_t i) const {
    const SampleSlice& s = slices[i];
    const std::uint64_t bytes = name_bytes(i);
    return {file(s.file), true, s.offset - bytes, bytes, stamps[s.file]};
  }
};

class DatasetIndex {
 public:
  using Slice = SampleSlice;

  // torchvision ImageFolder: classes are the sorted names of root's subdirectories, a
  // label is the class's position; files are found recursively under each class,
  // sorted, and kept when their extension (any case) is one of .jpg .jpeg .png .ppm
  // .bmp .pgm .tif .tiff .webp.
  // Each file is read as `check` says while indexing, for the dataset's identity; with a
  // `cache_dir` ("": none), only those changed since the last open (a stat each).
  static Result<DatasetIndex> from_image_folder(const std::string& root,
                                                ContentCheck check = ContentCheck::kWindows,
                                                const std::string& cache_dir = "");
  // Lines "relative/path<TAB>label", paths relative to the manifest's folder; blank
  // lines and lines starting with '#' are ignored. Files are read as from_image_folder's.
  static Result<DatasetIndex> from_manifest(const std::string& manifest,
                                            ContentCheck check = ContentCheck::kWindows,
                                            const std::string& cache_dir = "");

  std::size_t size() const { return labels_.size(); }
  // The file sample i is read from: its own, or its shard.
  std::string_view path(std::size_t i) const { return packed().path(i); }
  SampleSource source(std::size_t i) const { return packed().source(i); }
  // What messages call sample i: its path, or "<shard>, member '<name>' at byte
  // <offset>", the name read from the shard's tar headers while the shard is the file
  // indexed ("<shard>, member at byte <offset>" otherwise).
  std::string describe(std::size_t i) const;
  std::int64_t label(std::size_t i) const { return labels_[i]; }

  // The folder sample names are relative to: an ImageFolder's root, a manifest's folder,
  // or the deepest folder holding every shard. Where the dataset is mounted, which is no
  // part of what it is (dataset/dataset_identity.h).
  const std::string& root() const { return root_; }
  // The name of the file sample i is read from (its shard, when sharded): its path
  // relative to root(), or the whole path for a file outside it (a manifest's absolute
  // path elsewhere).
  std::string_view name(std::size_t i) const { return file_name(sharded() ? slices_[i].file : i); }
  std::string_view file_name(std::size_t f) const;
  // Sample i's bytes when it was indexed: its file's size, or kUnknownBytes for a file
  // that could not be stat'ed then (absent, say); when sharded, its member's size.
  static constexpr std::uint64_t kUnknownBytes = ~std::uint64_t{0};
  std::uint64_t bytes(std::size_t i) const { return sharded() ? slices_[i].size : sizes_[i]; }

  // By file (a sample's own, or a shard): a digest of its bytes as content_check() read
  // them while indexing, for the dataset's identity; 0 for a file that could not be read
  // (the identity then leaves every content out).
  const std::vector<std::uint64_t>& contents() const { return contents_; }
  ContentCheck content_check() const { return content_check_; }

  // Files: one per sample, or the shards.
  std::size_t file_count() const { return offsets_.size() - 1; }
  std::string_view file(std::size_t f) const { return packed().file(f); }
  // Whether samples are slices of shards; then slices() has one per sample, and
  // shard_stamps() what each shard was when it was indexed.
  bool sharded() const { return !slices_.empty(); }
  const std::vector<Slice>& slices() const { return slices_; }
  const std::vector<FileStamp>& shard_stamps() const { return shard_stamps_; }
  // Samples left out while indexing (on_error=skip: a sample with no image or a bad
  // label, the samples of a damaged shard that could be told apart), and bytes of
  // damaged shards past the damage, whose samples cannot be counted.
  std::uint64_t skipped_samples() const { return skipped_samples_; }
  std::uint64_t skipped_bytes() const { return skipped_bytes_; }
  // Class names by label; empty for a manifest.
  const std::vector<std::string>& classes() const { return classes_; }
  // Bytes of all file paths together (with slices(), what the index costs in the arena).
  std::size_t path_bytes() const { return paths_.size(); }
  PackedSamples packed() const {
    return {paths_, offsets_, slices_, shard_stamps_, field_slices_, columns_.extra_members(), name_headers_};
  }

  // Fields (sharded datasets only): the fields each sample has, as LoaderOptions::fields
  // named them; empty when a sample is an image and a label (label(i)).
  const std::vector<FieldSpec>& fields() const { return fields_; }
  // Where each of fields() is kept: a member field's member (FieldColumn::Store::kMember)
  // is a slice, the first one slices()[i]; a label is label(i) or a column beyond it; a
  // number a column of numbers.
  const FieldColumns& field_columns() const { return columns_; }
  // Member field f (image, text, bytes, array; a view: its image's) of sample i: where
  // its member lies; size FieldSlice::kMissing when the sample lacks it.
  SampleSlice field_slice(std::size_t i, std::size_t f) const {
    return packed().member_slice(i, columns_.of[f].column);
  }
  SampleSource field_source(std::size_t i, std::size_t f) const {
    return packed().member_source(i, columns_.of[f].column);
  }
  // Label field f of sample i, read while indexing; kMissingLabel when the sample lacks it.
  std::int64_t field_label(std::size_t i, std::size_t f) const;
  // Number field f of sample i, read while indexing; NaN when the sample lacks it.
  double field_number(std::size_t i, std::size_t f) const;
  bool has_field(std::size_t i, std::size_t f) const;
  // The first of fields() that sample i lacks; nullopt when it has them all. A sample
  // lacking one is in the index only under missing=skip (the loader leaves it out at
  // dispatch, so that the order of samples never depends on the fields) or empty.
  std::optional<std::size_t> missing_field(std::size_t i) const;
  // The most bytes member field f of `batch_size` samples takes: the sum of its
  // batch_size largest members (a missing one counts 0), the size of a ragged field's
  // region that holds any batch. A label or number field: 8 bytes a sample.
  std::uint64_t largest_batch_bytes(std::size_t f, std::uint32_t batch_size) const;
  // The columns beyond slices() and labels, as they would be copied: sample after sample,
  // field_columns().extra_members() FieldSlices, extra_labels() labels, numbers numbers.
  const std::vector<FieldSlice>& field_slices() const { return field_slices_; }
  const std::vector<std::int64_t>& field_labels() const { return field_labels_; }
  const std::vector<double>& field_numbers() const { return field_numbers_; }
  // Array field f's dtype and shape, from its members' .npy headers. REQUIRES: f is kArray.
  const ArrayFieldShape& array_shape(std::size_t f) const { return array_shapes_[f]; }
  // The samples' keys (with fields): the most bytes one takes, and the samples whose names
  // are longer than their tar headers hold (PackedSamples::name_bytes).
  std::uint32_t longest_key() const { return longest_key_; }
  const std::vector<NameHeaders>& name_headers() const { return name_headers_; }

 private:
  friend class DatasetIndexBuilder;
  std::string paths_;                      // all paths, back to back
  std::vector<std::uint64_t> offsets_{0};  // file f is paths_[offsets_[f], offsets_[f+1])
  std::vector<Slice> slices_;              // sharded: sample i; else empty, sample i is file i
  std::vector<FileStamp> shard_stamps_;    // sharded: file f when it was indexed
  std::vector<std::int64_t> labels_;
  std::vector<std::uint64_t> sizes_;     // not sharded: file i's bytes (kUnknownBytes: no stat)
  std::vector<std::uint64_t> contents_;  // by file
  ContentCheck content_check_ = ContentCheck::kWindows;
  std::string root_;  // root()
  std::vector<std::string> classes_;
  std::uint64_t skipped_samples_ = 0;
  std::uint64_t skipped_bytes_ = 0;
  std::vector<FieldSpec> fields_;
  FieldColumns columns_;
  std::vector<FieldSlice> field_slices_;       // samples x columns_.extra_members()
  std::vector<std::int64_t> field_labels_;     // samples x columns_.extra_labels()
  std::vector<double> field_numbers_;          // samples x columns_.numbers
  std::vector<ArrayFieldShape> array_shapes_;  // by field; kArray fields' only mean anything
  std::uint32_t longest_key_ = 0;
  std::vector<NameHeaders> name_headers_;
};

}  // namespace forkfeed
