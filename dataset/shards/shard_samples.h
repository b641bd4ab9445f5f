// Grouping one shard's tar members into samples, WebDataset's way: a sample is a run of
// consecutive members with the same key; its image is the member with an image
// extension, its label comes from a .cls or .json member or from the key's folder. With
// fields (a SampleSchema), each field takes the member of one of its extensions, and
// labels and numbers are read while grouping.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/sample_schema.h"
#include "dataset/shards/shard_sample.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"
#include "formats/member_key.h"
#include "formats/tar_member.h"

namespace forkfeed {

// Where a shard sample's label comes from.
enum class LabelSource : std::uint8_t {
  kCls = 1,          // a "cls" member: a decimal integer, surrounding whitespace allowed
  kJson = 2,         // a "json" member: an object whose integer field `json_field` is the label
  kClassFolder = 3,  // the key's folder ("n01440764/n01440764_10026": class n01440764);
                     // labels are positions in the dataset's sorted class names
};

struct LabelRule {
  LabelSource source = LabelSource::kCls;
  std::string json_field;  // kJson only
  bool operator==(const LabelRule&) const = default;
};

// Reads the bytes of a small member of the shard being grouped (a .cls or .json).
using ReadMember = std::function<Result<std::string>(const TarMember&)>;

// A label member larger than this is bad data: labels are numbers, not payloads.
inline constexpr std::uint64_t kMaxLabelBytes = 64 * 1024;
// ShardScan keeps the reasons of this many skipped samples, to log.
inline constexpr std::size_t kMaxSkipReasons = 8;
// ShardScan keeps this many of a shard's distinct member extensions, to name them.
inline constexpr std::size_t kMaxExtensionsKept = 32;

// An array field's members in one shard, as their .npy headers say: the dtype and shape
// of the first one kept (of sample `first_key`), and whether another shape came after.
// Every one has that dtype: another is refused (group_samples).
struct ShardArrays {
  bool seen = false;  // false: no sample kept has a member of the field
  bool varies = false;
  ElementType dtype = ElementType::kUint8;
  std::vector<std::int64_t> shape;
  std::string first_key;
  bool operator==(const ShardArrays&) const = default;
};

// One shard, grouped.
struct ShardScan {
  // In shard order; `shard` is the argument of group_samples. For kClassFolder, until
  // assign_class_labels runs, `label` is a position in `class_names`. With fields, a
  // sample's slice is its first member field's member (FieldColumns: member column 0),
  // and its label its first label field's (0 when the schema has none).
  std::vector<ShardSample> samples;
  // With fields, the sample's other columns, sample after sample: extra_members()
  // FieldSlices (their offsets from the sample's), extra_labels() labels and `numbers`
  // numbers each. A sample that lacks a field (missing=skip or empty) has the marker:
  // a member's size FieldSlice::kMissing (its slice's offset is then its first member's),
  // a label kMissingLabel, a number NaN.
  std::vector<FieldSlice> field_slices;
  std::vector<std::int64_t> field_labels;
  std::vector<double> field_numbers;
  // The kept samples whose name at their slice's offset is longer than its tar header
  // holds (NameHeaders; `sample` is the position in `samples`). With fields: the most bytes
  // a kept sample's key takes, and by array field, in the schema's order, their members.
  std::uint32_t longest_key = 0;
  std::vector<NameHeaders> name_headers;
  std::vector<ShardArrays> arrays;
  // With fields: bit f set when a member of this shard is one of field f's sources,
  // whatever became of its sample; and the shard's distinct member extensions,
  // lower-cased and sorted (the first kMaxExtensionsKept found), to name them when a
  // field is found in no shard.
  std::uint32_t fields_seen = 0;
  std::vector<std::string> extensions;
  // kClassFolder only: the distinct class names of this shard's samples, sorted bytewise.
  std::vector<std::string> class_names;
  // A digest of the content digests (TarMember::content) of the members its kept samples
  // take, in archive order: what the dataset's identity knows of the shard's bytes (a
  // member no field reads is no part of it).
  std::uint64_t content = 0;
  std::uint64_t skipped = 0;              // samples left out (on_error=skip)
  std::uint64_t skipped_bytes = 0;        // of a damaged shard, from the damage on: unread
  std::vector<std::string> skip_reasons;  // the first kMaxSkipReasons of them
};

// Groups `members` (one shard's regular files, in archive order) into samples.
// A sample with no image, two images, two members of one extension, no label member, a
// label that does not parse, or an image over `max_file_bytes` (or 4 GiB) is BadData
// naming `shard_path` and the key; with on_error=skip it is left out and counted instead.
// A key that comes back after another key is a new sample, as in WebDataset. Errors of
// `read_member` are returned as they are, whatever `on_error` says: they concern the
// shard, not a sample.
//
// With `fields` (not empty), `rule` is not used, and a sample is the fields of its
// members: each field takes the member of its sources that the sample has, members no
// field takes are passed over (as WebDataset does), and label and number fields are read
// here. BadData, as above: two members of one extension, two of one field's sources (a
// .jpg and a .png under "jpg;png"), a member field's member over max_file_bytes (or 4 GiB - 2),
// a label or number that does not parse, members more than 2 GiB apart, and, with
// missing=error, a field the sample lacks (no member of its sources; for a keyed field,
// no such key in its .json member), an array member whose .npy header does not parse or
// has more than kMaxArrayRank dimensions, a key over kMaxKeyBytes or not UTF-8, a name
// whose headers take over kMaxNameHeaderBytes, named with the shard, the key and the
// field. An array field whose members hold two dtypes is InvalidArgument, naming a sample
// of each: a field's arrays have one dtype, whatever on_error says. With
// missing=skip or empty, the sample is kept with the field's marker (ShardScan): the
// order of samples never depends on which fields are read.
Result<ShardScan> group_samples(std::uint32_t shard, std::string_view shard_path,
                                std::span<const TarMember> members, const LabelRule& rule,
                                const ReadMember& read_member, OnError on_error, std::uint64_t max_file_bytes,
                                const SampleSchema& fields = SampleSchema{});

// kClassFolder's second pass, once every shard is grouped (or loaded from its cache):
// returns the sorted distinct class names of all `scans` and rewrites each sample's label
// from a position in its shard's class_names to a position in that list.
std::vector<std::string> assign_class_labels(std::span<ShardScan> scans);

}  // namespace forkfeed
