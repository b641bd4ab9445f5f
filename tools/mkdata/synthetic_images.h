// Deterministic, photo-like synthetic datasets (smooth gradients, shapes, texture and
// noise) in torchvision ImageFolder layout, so tests and the demo never download data.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "forkfeed/status.h"

namespace forkfeed {

struct SyntheticDatasetSpec {
  std::string out;              // root folder; created if missing
  std::uint32_t images = 1000;  // in total, spread evenly over the classes
  std::uint32_t classes = 10;
  std::uint64_t seed = 0;
  std::uint32_t min_side = 200;  // shorter side is drawn from [min_side, max_side]
  std::uint32_t max_side = 600;
  // Roughly one image in `special_every` is grayscale JPEG, one progressive JPEG, one PNG;
  // 0: every image is a baseline colour JPEG.
  std::uint32_t special_every = 20;
};

// Writes the dataset; the same spec always gives byte-identical files.
// `progress` (optional) is called with the number of images written so far.
Status write_synthetic_dataset(const SyntheticDatasetSpec& spec,
                               const std::function<void(std::uint32_t)>& progress = {});

}  // namespace forkfeed
