// SamplePipeline: one sample from its bytes to the slot — read, plan, decode, transform. One per
// worker process; it owns every buffer it needs and reuses them across samples, so
// the hot path allocates nothing once the buffers have grown to the largest image.
#pragma once

#include <string_view>
#include <vector>

#include "base/stage_profile.h"
#include "transforms/sample_geometry.h"
#include "transport/arena_layout.h"
#include "workers/fused_decode.h"
#include "workers/image_decoder.h"
#include "workers/sample_reader.h"

namespace forkfeed {

class SamplePipeline {
 public:
  explicit SamplePipeline(const TransformSpec& spec, DecodePath path = DecodePath::kFused)
      : spec_(spec), path_(path), reader_(spec.max_file_bytes), decoders_(path), transform_(spec) {}

  // Writes sample `index` of `epoch`, read from `source`, into `out`. Errors say why, not
  // which file: the caller names it (the orchestrator has the path, a skip note has not).
  Status run(const SampleSource& source, std::uint64_t epoch, std::uint64_t index, std::byte* out);
  // The same for a sample that is a whole file.
  Status run(std::string_view path, std::uint64_t epoch, std::uint64_t index, std::byte* out);
  // Decodes `file`, read already, and transforms it with the draws of `rng` into `out`:
  // a view of an image another field read (workers/sample_fields.h). When `geometry` is
  // not null it gets where the image's pixels went, for its masks to follow.
  Status decode(FileBytes file, KeyedRng rng, std::byte* out, SampleGeometry* geometry = nullptr);
  // Whether decode() draws from the sample's boxes, which its `geometry` must then hold.
  bool needs_boxes() const { return transform_.needs_boxes(); }
  // The height and width of the sample decode() wrote last (FusedDecode::output_size).
  cv::Size output_size() const { return transform_.output_size(); }
  // Times each stage of run() and decode() into `profile` from now on: the read, the plan,
  // the decode, then FusedDecode::profile_into's; null: no more.
  void profile_into(StageProfile* profile);
  // The pipeline's reader, for the other fields of its sample.
  SampleReader& reader() { return reader_; }

 private:
  // Decodes `file` and writes the sample to `out`, by path_.
  Status decode_fused(FileBytes file, KeyedRng& rng, std::byte* out, SampleGeometry* geometry);
  Status decode_reference(FileBytes file, KeyedRng& rng, std::byte* out, SampleGeometry* geometry);

  TransformSpec spec_;
  DecodePath path_;
  SampleReader reader_;
  ImageDecoders decoders_;
  FusedDecode transform_;
  cv::Mat pixels_;  // reused decode target: the image, or the region of it
  StageProfile* profile_ = nullptr;
  std::size_t read_stage_ = 0, plan_stage_ = 0, region_stage_ = 0, whole_stage_ = 0;  // profile_'s
};

}  // namespace forkfeed
