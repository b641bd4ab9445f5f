// Grouping one shard's tar members into samples, WebDataset's way: a sample is a run of
// consecutive members with the same key; its image is the member with an image
// extension, its label comes from a .cls or .json member or from the key's folder.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/shards/tar_member.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"

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

// A member name split as WebDataset's base_plus_ext does: the key is the name up to the
// first '.' of its last path component, folders kept; the extension is the rest, as
// written (compare it case-insensitively). "a/b/x.y.jpg": key "a/b/x", extension "y.jpg".
struct MemberKey {
  std::string_view key;
  std::string_view extension;
};
// nullopt for a name WebDataset gives no key (no '.' in it, or only a leading one, as in
// "__index__" or ".hidden"): such a member belongs to no sample and is passed over.
std::optional<MemberKey> split_member_name(std::string_view name);

// Reads the bytes of a small member of the shard being grouped (a .cls or .json).
using ReadMember = std::function<Result<std::string>(const TarMember&)>;

// A label member larger than this is bad data: labels are numbers, not payloads.
inline constexpr std::uint64_t kMaxLabelBytes = 64 * 1024;
// ShardScan keeps the reasons of this many skipped samples, to log.
inline constexpr std::size_t kMaxSkipReasons = 8;

// One shard, grouped.
struct ShardScan {
  // In shard order; `shard` is the argument of group_samples. For kClassFolder, until
  // assign_class_labels runs, `label` is a position in `class_names`.
  std::vector<ShardSample> samples;
  // kClassFolder only: the distinct class names of this shard's samples, sorted bytewise.
  std::vector<std::string> class_names;
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
Result<ShardScan> group_samples(std::uint32_t shard, std::string_view shard_path,
                                std::span<const TarMember> members, const LabelRule& rule,
                                const ReadMember& read_member, OnError on_error,
                                std::uint64_t max_file_bytes);

// kClassFolder's second pass, once every shard is grouped (or loaded from its cache):
// returns the sorted distinct class names of all `scans` and rewrites each sample's label
// from a position in its shard's class_names to a position in that list.
std::vector<std::string> assign_class_labels(std::span<ShardScan> scans);

}  // namespace forkfeed
