// SampleFields: a worker's writing of one sample of a schema (forkfeed/fields.h) into its
// slot, field by field as the arena's SlotFields places them: image fields decoded and
// transformed, each by its own pipeline (a view decodes the bytes its image read, with
// draws of its own); text checked as UTF-8 and bytes copied; arrays checked against their
// .npy header and the field's dtype and shape, their data copied; labels and numbers, read
// while indexing, copied from the index; masks and boxes, after the images, following where
// the first image field's pixels went (its SampleGeometry), boxes sanitised, and last the
// per_box fields, keeping the values of the boxes kept; the sample's key from the tar headers before
// its slice (read with its first member when it has that). One per worker per loader; it
// owns what it reuses.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <optional>

#include "transforms/sample_geometry.h"
#include "transport/arena.h"
#include "transport/slot_contents.h"
#include "workers/box_values.h"
#include "workers/image_decoder.h"
#include "workers/sample_pipeline.h"

namespace forkfeed {

class SampleFields {
 public:
  // For the loader of `control`, which has a schema (control.fields.count > 0).
  SampleFields(const ControlBlock& control, DecodePath path);

  // Writes sample `sample` of `epoch` as the slot's next sample. Errors say why and name
  // the field, not the sample (the caller names it); a sample's own fault is kBadData.
  Status run(const SharedIndex& index, std::uint64_t epoch, std::uint64_t sample, const SlotContents& slot);
  // The boxes of the sample run() last wrote that sanitising dropped.
  std::size_t dropped_boxes() const { return boxed_ ? boxes_read_ - kept_.size() : 0; }

 private:
  // One field and how it is written.
  struct Field {
    const FieldRegion* region;
    FieldColumn column;
    std::unique_ptr<SamplePipeline> image;  // image fields: its pipeline
    std::uint64_t draws = 0;                // image fields: its place among them (0: the first)
    Layout layout = Layout::kNhwc;          // image fields: their samples' (resolved)
  };
  Status write_all(const SharedIndex& index, std::uint64_t epoch, std::uint64_t sample,
                   const SlotContents& slot);
  Status write_member(const Field& f, FileBytes bytes, std::uint64_t epoch, std::uint64_t sample,
                      const SlotContents& slot);
  static Status write_array(const FieldRegion& r, FileBytes bytes, const SlotContents& slot);
  // Decodes image field `f` with the draws of `rng` into its next sample; one of each its own
  // size (a ragged field) gets its shape beside it.
  Status write_image(const Field& f, FileBytes bytes, KeyedRng rng, const SlotContents& slot);
  // Decodes mask `r` and makes it follow the image's geometry_.
  Status write_mask(const FieldRegion& r, FileBytes bytes, const SlotContents& slot);
  // Reads boxes `r`, makes them follow geometry_ and keeps those sanitising keeps (kept_).
  Status write_boxes(const FieldRegion& r, FileBytes bytes, std::uint32_t column, const SlotContents& slot);
  // Reads per_box field `r` and keeps the values of the boxes kept.
  Status write_per_box(const FieldRegion& r, FileBytes bytes, std::uint32_t column, const SlotContents& slot);
  // Reads the sample's boxes into geometry_.boxes, before its image is planned, for the
  // ops that draw from them (RandomIoUCrop); none when its member is missing.
  Status read_boxes_to_plan(const PackedSamples& packed, std::uint64_t sample);
  // Reads `bytes`, the member of `column`, into box_values_, unless it holds it already.
  Status read_box_member(const FieldRegion& r, FileBytes bytes, std::uint32_t column);
  // `s`, the error of field `r` about its member at `source`, naming that member.
  Status about_member(const FieldRegion& r, SampleSource source, const Status& s);
  // Writes the key that the member name in `headers` (PackedSamples::name_source) gives.
  Status write_key(FileBytes headers, std::string_view shard, const SlotContents& slot) const;
  // Leaves field `r` empty in the next sample (MissingField::kEmpty); an image field of
  // each its own size gets an empty shape in its `layout`.
  static void write_missing(const FieldRegion& r, const SlotContents& slot, Layout layout = Layout::kNhwc);

  const ControlBlock& control_;
  std::vector<Field> fields_;
  const FieldRegion* keys_ = nullptr;  // kKeyField's region
  SampleReader reader_;
  // Where the first image field's pixels went, recorded when the schema has masks or
  // boxes; `followed_`: recorded for this sample (not when its image is missing).
  bool follows_ = false;
  bool followed_ = false;
  const Field* plan_boxes_ = nullptr;  // the boxes field, when the image plans with its boxes
  SampleGeometry geometry_;
  cv::Mat mask_storage_;  // reused: the memory of a mask as decoded
  // This sample's boxes: the member read (and its column), how many it held and which of
  // them sanitising kept (boxed_: whether they were read: not when missing).
  BoxValues box_values_;
  std::optional<std::uint32_t> box_column_;
  bool boxed_ = false;
  std::size_t boxes_read_ = 0;
  std::vector<std::uint32_t> kept_;
  std::vector<Box> boxes_;              // reused
  std::vector<float> box_floats_;       // reused
  std::vector<std::int64_t> box_ints_;  // reused
};

}  // namespace forkfeed
