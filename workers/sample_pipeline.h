// SamplePipeline: one sample from file to slot — read, decode, transform. One per
// worker process; it owns every buffer it needs and reuses them across samples.
#pragma once

#include <string_view>
#include <vector>

#include "transport/arena_layout.h"
#include "workers/image_decoder.h"
#include "workers/transform.h"

namespace forkfeed {

class SamplePipeline {
 public:
  explicit SamplePipeline(const TransformSpec& spec) : spec_(spec), transform_(spec) {}

  // Writes sample `index` of `epoch`, read from `path`, into `out`. Errors name the file.
  Status run(std::string_view path, std::uint64_t epoch, std::uint64_t index, std::byte* out);

 private:
  Status read_file(const std::string& path);

  TransformSpec spec_;
  ImageDecoders decoders_;
  Transform transform_;
  std::vector<std::byte> file_;  // reused: grows to the largest file, never shrinks
  std::size_t file_size_ = 0;    // bytes of the current file in file_
  cv::Mat rgb_;                  // reused decode target
};

}  // namespace forkfeed
