// StreamPlan: LoaderOptions checked and resolved into what every later stage takes — the
// options, the sample schema parsed once, and each image field's transform built once
// (plan/image_plan.h). Made in one place (a Loader's open, forkfeedd's open_stream,
// forkfeed-bench's flags) and then taken as it is, by type, by the Loader, its arena
// (plan/arena_plan.h), forkfeedd's admission and the reports: nothing parses or builds
// again, and nothing pairs two readings of one text.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "dataset/sample_schema.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"
#include "plan/image_plan.h"

namespace forkfeed {

class StreamPlan {
 public:
  // Every option checked, the first problem an error naming the option and what to do
  // (what validate() says); else the plan.
  static Result<StreamPlan> of(const LoaderOptions& options);

  // The options, with size and dtype what the first image field's transform makes.
  const LoaderOptions& options() const { return options_; }
  const LoaderOptions* operator->() const { return &options_; }
  // The fields, as the dataset reads them; empty without a schema.
  const SampleSchema& schema() const { return schema_; }
  // Each image field's transform, in the schema's order (one without a schema); the
  // first is the batch's pixels, and the one masks and boxes follow.
  const std::vector<ImagePlan>& images() const { return images_; }
  const TransformSpec& transform() const { return images_.front().transform; }

 private:
  StreamPlan(LoaderOptions options, SampleSchema schema, std::vector<ImagePlan> images)
      : options_(std::move(options)), schema_(std::move(schema)), images_(std::move(images)) {}
  LoaderOptions options_;
  SampleSchema schema_;
  std::vector<ImagePlan> images_;
};

}  // namespace forkfeed
