// The records of a COCO instances file that read_coco (tools/shard/coco.h) checks and packs,
// streamed from its mapping through nlohmann's SAX parser (tools/shard/coco_text.h): of each
// image, annotation and category the fields the shards need, and with masks the
// segmentations. Where the JSON holds another kind of value than COCO's (a string in a bbox,
// a list in a polygon), the annotation says so, for read_coco to refuse it by name.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "forkfeed/status.h"
#include "tools/shard/coco_mask.h"
#include "tools/shard/coco_text.h"

namespace forkfeed {

struct CocoImage {
  std::optional<std::int64_t> id{};
  std::string file_name{};
  std::optional<std::int64_t> width{}, height{};
  std::size_t entry = 0;  // its place in "images", from 0, for messages
};

struct CocoAnnotation {
  std::optional<std::int64_t> id{}, image_id{}, category_id{};
  std::array<double, 4> bbox{};
  std::size_t bbox_numbers = 0;  // how many the bbox held: 4, or it is refused
  bool crowd = false;
  double area = 0;
  std::size_t entry = 0;  // its place in "annotations", from 0, where it has no id
  // The first value of another kind than COCO's where it has one, as a message says it
  // ("its bbox holds the string \"1\" where ..."); empty when there is none.
  std::string misread{};
  // Its segmentation, when masks are packed: polygons, or an RLE (counts or a string) of size.
  std::vector<std::vector<double>> polygons{};
  RunLengths counts{};
  std::string compressed{};
  std::vector<std::int64_t> size{};
  bool rle = false;
  // The first of its RLE counts that is none of pycocotools' (a uint32): negative, a
  // fraction, or past 2^32 - 1.
  std::optional<double> bad_count{};
};

struct CocoCategory {
  std::optional<std::int64_t> id{};
  std::size_t entry = 0;
};

struct CocoRecords {
  std::vector<CocoImage> images;
  std::vector<CocoAnnotation> annotations;
  std::vector<CocoCategory> categories;
};

// A number of the file as a message writes it: the shortest text that reads back as it
// (1099511627776, 1.5, 1e+08).
std::string number_text(double v);

// The records of `file`, segmentations only when `segmentations`. BadData for text that is
// not JSON (saying what: more after its value, a string that is not UTF-8, a NUL), with no
// "images" list, nested past 1000 or naming one of the lists twice; ResourceExhausted when
// the records and what the parser holds of the text pass `max_held_bytes`. Messages name
// no file: the caller's do.
Result<CocoRecords> read_coco_records(const MappedFile& file, bool segmentations,
                                      std::uint64_t max_held_bytes);

}  // namespace forkfeed
