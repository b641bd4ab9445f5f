// SamplePipeline: read (SampleReader), decode, transform into the slot.
#include "workers/sample_pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <opencv2/core.hpp>
#include <optional>
#include <string>

#include "base/printable.h"

namespace forkfeed {

Status SamplePipeline::decode_fused(FileBytes file, KeyedRng& rng, std::byte* out, SampleGeometry* geometry) {
  std::optional<StageTimer> timer(std::in_place, profile_, plan_stage_);
  auto choice = decoders_.choose(file, spec_.max_pixels);
  if (!choice.ok()) return choice.status();
  auto [decoder, size] = *choice;
  const bool whole = size.width == 0;  // the header does not say: decode first, plan after
  if (whole) {
    timer.emplace(profile_, whole_stage_);
    if (Status s = decoders_.decode(file, spec_.max_pixels, pixels_); !s.ok()) return s;
    size = {pixels_.cols, pixels_.rows};
    timer.emplace(profile_, plan_stage_);
  }
  auto window = transform_.plan(size.width, size.height, rng, geometry);
  if (!window.ok()) return window.status();
  cv::Mat region;  // stays empty when the sample is all padding: none of the image shows
  if (whole && !window->empty()) {
    region = pixels_(pixel_rect(window->source, 1.0, {0, 0}, pixels_.size()));
  } else if (!window->empty()) {
    timer.emplace(profile_, region_stage_);
    const int side = std::max(window->width, window->height);
    if (Status s = decoder->decode_region(file, window->source, side, pixels_, region); !s.ok()) return s;
  }
  timer.reset();
  transform_.write(region, *window, rng, out, geometry);
  return Status::Ok();
}

Status SamplePipeline::decode_reference(FileBytes file, KeyedRng& rng, std::byte* out,
                                        SampleGeometry* geometry) {
  {
    const StageTimer timer(profile_, whole_stage_);
    if (Status s = decoders_.decode(file, spec_.max_pixels, pixels_); !s.ok()) return s;
  }
  return transform_.apply(pixels_, rng, out, geometry);
}

Status SamplePipeline::run(std::string_view path, std::uint64_t epoch, std::uint64_t index, std::byte* out) {
  return run(SampleSource{path}, epoch, index, out);
}

Status SamplePipeline::run(const SampleSource& source, std::uint64_t epoch, std::uint64_t index,
                           std::byte* out) {
  // The reader's buffer grows to the sample: an allocation failure must not escape a
  // worker, where a crash would pin it on the sample as bad data.
  try {
    std::optional<StageTimer> timer(std::in_place, profile_, read_stage_);
    auto file = reader_.read(source);
    timer.reset();
    if (!file.ok()) return file.status();
    return decode(*file, KeyedRng({spec_.seed, epoch, index}), out);
  } catch (const std::bad_alloc&) {
    return decode_failure(true, "cannot read the image", "std::bad_alloc");
  }
}

void SamplePipeline::profile_into(StageProfile* profile) {
  profile_ = profile;
  if (profile != nullptr) {
    read_stage_ = profile->stage("read the file");
    plan_stage_ = profile->stage("read the header, plan the window");
    region_stage_ = profile->stage("decode the window (DCT-scaled)");
    whole_stage_ = profile->stage("decode the whole image");
  }
  transform_.profile_into(profile);
}

Status SamplePipeline::decode(FileBytes file, KeyedRng rng, std::byte* out, SampleGeometry* geometry) {
  Status s;
  // OpenCV reports failures (including allocation) by throwing; nothing may escape a
  // worker, least of all an allocation failure.
  try {
    const bool fused = path_ == DecodePath::kFused && transform_.fusable();
    s = fused ? decode_fused(file, rng, out, geometry) : decode_reference(file, rng, out, geometry);
  } catch (const cv::Exception& e) {
    s = decode_failure(e.code == cv::Error::StsNoMem, "cannot decode or transform image",
                       printable(e.what()));
  } catch (const std::bad_alloc&) {
    s = decode_failure(true, "cannot decode or transform the image", "std::bad_alloc");
  } catch (const std::exception& e) {
    s = decode_failure(false, "cannot decode or transform image", printable(e.what()));
  }
  return s;
}

}  // namespace forkfeed
