// A COCO instances file (annotations/instances_*.json) and its image folder as a dataset
// forkfeed-shard packs: each image a sample, its annotations one "<key>.json" member that a
// Loader reads with boxes and per_box fields:
//   {"image_id": 139, "boxes": [[x, y, w, h], ...], "labels": [...], "iscrowd": [...], "area": [...]}
// (COCO's bbox, in pixels: format=xywh), and with CocoOptions::masks its segmentations
// rasterised into a "<key>.seg.png" or "<key>.inst.png" (tools/shard/coco_mask.h). Read as a
// stream (tools/shard/coco_reader.h), so that what is held is what the shards need, not the
// file's tree: segmentations only when masks are asked for.
#pragma once

#include <cstdint>
#include <string>

#include "forkfeed/dataset.h"
#include "forkfeed/status.h"
#include "tools/shard/convert.h"

namespace forkfeed {

struct CocoDataset {
  DatasetIndex index;     // the images, by id, in `options.images`
  SampleMembers members;  // the image, then "json"
};

// Reads `annotations` as `options` (ShardConversion::coco) say. BadData naming the file and the entry (an
// annotation by its id) for what is not COCO's: text that is not JSON, no "images" list, an image without
// id or file_name, two images with one id or one file (however its file_name spells it), an annotation of
// an image or a category that is not there, a bbox that is not 4 numbers, a value of another kind than
// COCO's in a bbox or (with masks) a segmentation; ResourceExhausted past max_held_bytes, which bounds the
// records and what the JSON parser holds of the text.
Result<CocoDataset> read_coco(const std::string& annotations, const CocoOptions& options);

}  // namespace forkfeed
