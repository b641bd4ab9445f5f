// Packing a dataset (an ImageFolder tree or a manifest) into WebDataset tar shards: the
// one owner of sample keys, member names, and which shards are written or kept.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/status.h"

namespace forkfeed {

// One member of a sample in a shard: "<key>.<extension>" holding `bytes`.
struct ShardMember {
  std::string extension;  // lower-case, without the leading '.'; may hold dots ("seg.png")
  std::string bytes;
};

// A sample as convert_to_shards() packs it: what the dataset's index says of it.
struct PackedSample {
  std::uint64_t index = 0;     // in the index's order
  std::string_view path;       // the image file
  std::string_view extension;  // the image member's: the file's, lower-cased
  std::int64_t label = 0;
};

// The members of `sample`, in the order they are written, given its image file's bytes.
using SampleMembers =
    std::function<Result<std::vector<ShardMember>>(const PackedSample& sample, std::string image)>;

// How forkfeed-shard reads a COCO instances file (tools/shard/coco.h).
struct CocoOptions {
  std::string images{};  // the folder its file_names are in
  // labels: the category ids as they are (COCO's 1..90, with gaps: what torchvision's
  // detection models take, num_classes=91), or 1..K in the order of the sorted ids.
  bool contiguous_labels = false;
  // iscrowd=1 annotations (a region of many objects): dropped, as torchvision's detection
  // reference drops them for training, or kept with iscrowd 1.
  bool keep_crowd = false;
  // Images without an annotation (after crowds are dropped): kept, with no boxes, or dropped.
  bool keep_empty = true;
  // The annotations' segmentations (polygons, RLE) as pycocotools rasterises them, in a
  // member of each image: none; "seg.png", 8-bit, each pixel the label of the one
  // annotation covering it, 0 for none, 255 where two overlap (torchvision's segmentation
  // reference's rule); or "inst.png", 16-bit, each pixel k of the k-th box (from 1) the
  // last of them in the file covers, 0 for none.
  enum class Masks { kNone, kSemantic, kInstance };
  Masks masks = Masks::kNone;
  // The most bytes reading the file may take in memory beside its mapped text: the images'
  // names, the annotations' boxes (and segmentations, with masks) and what the JSON parser
  // holds of the text (tools/shard/coco_text.h). A larger file is refused, saying so,
  // before memory runs out.
  std::uint64_t max_held_bytes = std::uint64_t{4} << 30;
};

struct ShardConversion {
  std::string from;                 // an ImageFolder root (a directory) or a manifest file
  std::string out;                  // a path with one %d or %0Nd: see ShardPattern
  std::uint64_t shard_size = 1000;  // samples per shard; the last may hold fewer
  // Rewrite shards that exist. Without it an existing shard is kept: TarWriter puts a
  // shard in place only when it is complete, so one that exists is a finished one.
  bool force = false;
  // Unset: the image ("<extension>") then its label in decimal ("cls"). Set, the members
  // it returns (forkfeed-mkdata --fields adds captions, arrays, masks); its error stops
  // the conversion. Each extension must be non-empty, without '/', once per sample.
  SampleMembers members;
  // Set (coco.images not empty): `from` is a COCO instances file, its images in coco.images.
  CocoOptions coco{};
};

struct ShardConversionReport {
  std::uint64_t samples = 0;
  std::uint64_t shards = 0;
  std::uint64_t kept = 0;   // shards that existed and were left alone
  std::uint64_t bytes = 0;  // of all the shards, kept ones included
  std::string folder;       // where the shards are
  std::string spec;         // the brace pattern that reads them back (--shards)
};

// A sample's WebDataset name: members "<key>.<extension>" and "<key>.cls".
struct SampleName {
  std::string key;
  std::string extension;  // the image's, lower-cased, without the '.'
};

// The name of the image at `relative` (to the dataset's root), e.g. "class_000/img_00000.jpg":
// key "class_000/img_00000", extension "jpg". '.' in the file name's stem become '_', so
// that WebDataset's key (the name up to the first '.' of its last component) is the
// whole key; folders are kept as they are, so that class_folder labels (sorted folder
// names) stay those of the ImageFolder. InvalidArgument for a name without an image
// extension (a reader would find no image in the sample) or with an empty stem.
Result<SampleName> sample_name(std::string_view relative);

// Indexes `conversion.from` as a Loader would (same order, same labels) and writes its
// samples in index order, shard_size to a shard: per sample "<key>.<ext>" holding the
// image file's bytes and "<key>.cls" holding its label in decimal (or what
// `conversion.members` gives). A manifest with a header line (has_header_line(),
// dataset/manifest_table.h) is a table: its first column the images, each other column a
// member "<key>.<column>" in column order: cls the label; a column named like an image or
// an array ("seg.png", "npy") the bytes of the file its cell names; any other the cell
// itself; none for an empty cell. Names are all checked
// before anything is written: two consecutive samples with one key (which a reader
// would merge into one sample) are BadData naming both files. InvalidArgument only for
// bad arguments, before anything is written: a bad `out`, a shard_size of 0, a `from`
// that does not exist. `progress`, if set, is called with the samples
// done (written or in kept shards) after each shard and every 64 samples.
Result<ShardConversionReport> convert_to_shards(
    const ShardConversion& conversion,
    const std::function<void(std::uint64_t done, std::uint64_t total)>& progress = {});

}  // namespace forkfeed
