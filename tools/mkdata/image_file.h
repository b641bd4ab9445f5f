// One file of a synthetic dataset: image number `index`, drawn from (seed, index),
// encoded in its format and written to disk.
#pragma once

#include <cstdint>
#include <filesystem>

#include <opencv2/core/types.hpp>

#include "forkfeed/status.h"
#include "tools/mkdata/synthetic_images.h"

namespace forkfeed::mkdata {

enum class ImageFormat { kBaselineJpeg, kGrayJpeg, kProgressiveJpeg, kPng };

// The size (width x height) of image `index` of `spec`: the first draws of its stream.
cv::Size image_size_of(const SyntheticDatasetSpec& spec, std::uint32_t index);

// Writes image `index` of the dataset `spec` describes to `path` as `format`; the same
// arguments always give the same bytes. REQUIRES: spec passed validation. Throws nothing:
// OpenCV errors and bad_alloc come back as a Status naming `path`.
Status write_image(const SyntheticDatasetSpec& spec, std::uint32_t index, const std::filesystem::path& path,
                   ImageFormat format);

}  // namespace forkfeed::mkdata
