// SampleFields: a worker's writing of one sample of a schema (forkfeed/fields.h) into its
// slot, field by field as the arena's SlotFields places them: image fields decoded and
// transformed, each by its own pipeline (a view decodes the bytes its image read, with
// draws of its own); text checked as UTF-8 and bytes copied; arrays checked against their
// .npy header and the field's dtype and shape, their data copied; labels and numbers, read
// while indexing, copied from the index; masks, last, following where the first image
// field's pixels went (its SampleGeometry); the sample's key from the tar headers before
// its slice (read with its first member when it has that). One per worker per loader; it
// owns what it reuses.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transforms/sample_geometry.h"
#include "transport/arena.h"
#include "transport/slot_contents.h"
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

 private:
  // One field and how it is written.
  struct Field {
    const FieldRegion* region;
    FieldColumn column;
    std::unique_ptr<SamplePipeline> image;  // image fields: its pipeline
    std::uint64_t draws = 0;                // image fields: its place among them (0: the first)
  };
  Status write_all(const SharedIndex& index, std::uint64_t epoch, std::uint64_t sample,
                   const SlotContents& slot);
  Status write_member(const Field& f, FileBytes bytes, std::uint64_t epoch, std::uint64_t sample,
                      const SlotContents& slot);
  static Status write_array(const FieldRegion& r, FileBytes bytes, const SlotContents& slot);
  // Decodes mask `r` and makes it follow the image's geometry_.
  Status write_mask(const FieldRegion& r, FileBytes bytes, const SlotContents& slot);
  // `s`, the error of field `r` about its member at `source`, naming that member.
  Status about_member(const FieldRegion& r, SampleSource source, const Status& s);
  // Writes the key that the member name in `headers` (PackedSamples::name_source) gives.
  Status write_key(FileBytes headers, std::string_view shard, const SlotContents& slot) const;
  // Leaves field `f` empty in the next sample (MissingField::kEmpty).
  static void write_missing(const FieldRegion& r, const SlotContents& slot);

  const ControlBlock& control_;
  std::vector<Field> fields_;
  const FieldRegion* keys_ = nullptr;  // kKeyField's region
  SampleReader reader_;
  // Where the first image field's pixels went, recorded when the schema has masks;
  // `followed_`: recorded for this sample (not when its image is missing).
  bool masks_ = false;
  bool followed_ = false;
  SampleGeometry geometry_;
  cv::Mat mask_storage_;  // reused: the memory of a mask as decoded
};

}  // namespace forkfeed
