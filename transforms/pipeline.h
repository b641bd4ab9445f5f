// Pipeline: a transform as the workers run it — the ops of its text, split by stage
// (transforms/ops.h), with what it makes: a size x size sample, uint8 or (after
// Normalize) float32.
//
//   text ── parse_calls ── make_op ──▶ geometry ops │ pixel ops │ Normalize │ tensor ops
//                                        plan()        run_pixels()  (store)   run_tensor()
//
// The geometry ops reduce to one window of the decoded image (plan), which the decoder
// decodes alone and the FusedDecode resizes into the sample; the pixel ops then work on
// that small uint8 sample in place, the store normalises it into the slot, and the
// tensor ops work on the slot. Every draw comes from the sample's KeyedRng, in the
// pipeline's order, so a sample depends only on (seed, epoch, index).
//
// "train" and "eval" are shorthands for RandomResizedCrop(size), RandomHorizontalFlip()
// and Resize(round(size / 0.875)), CenterCrop(size). Options ask for float32 (dtype) on a
// pipeline without Normalize: Normalize() is appended, with the options' mean and std.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/stage_profile.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"
#include "transforms/crop.h"
#include "transforms/ops.h"

namespace forkfeed {

// What a pipeline takes from the loader's options.
struct PipelineOptions {
  std::uint32_t size = 0;  // 0: the pipeline's own; else it must make this size
  DType dtype = DType::kUint8;
  std::array<float, 3> mean{};
  std::array<float, 3> std{};
  std::uint64_t max_pixels = 0;  // a Resize past this many pixels is bad data
  // 0: the pipeline must make one square size; else samples whose size depends on the
  // image are taken, at most this on a side (Pipeline::size() is then 0).
  std::uint32_t max_size = 0;
};

class Pipeline {
 public:
  // Reads and checks `text`: every error names the op and the argument, or the order.
  static Result<Pipeline> build(std::string_view text, const PipelineOptions& options);

  // The side of every sample; 0: each its own, at most max_size() a side.
  std::uint32_t size() const { return size_; }
  std::uint32_t max_size() const { return max_size_; }
  DType dtype() const { return normalise_ ? DType::kFloat32 : DType::kUint8; }
  // Normalize's mean and std (the options' when the pipeline has no Normalize).
  const OpDefaults& normalisation() const { return normalisation_; }

  // Whether the crops and resizes reduce to one window resized once: at most one of
  // them resamples. Two (Resize((16, 16)), Resize((64, 64))) keep the loss of the
  // first: such a pipeline decodes the whole image and does them one after another.
  bool fusable() const { return fusable_; }
  // The window of a width x height image that becomes the sample.
  Result<SampleWindow> plan(int width, int height, KeyedRng& rng) const;
  // The window that `steps` (of a width x height image) keep: what plan() returns.
  static SampleWindow window_of(const std::vector<GeometryStep>& steps, int width, int height);
  // The same draws, as steps to do one after another on the whole image (the reference).
  // `boxes` (XYXY, in the image's pixels) are the sample's, for the ops that draw from them.
  Status steps(int width, int height, KeyedRng& rng, std::vector<GeometryStep>& out,
               std::span<const Box> boxes = {}) const;
  // Whether a geometry op draws from the sample's boxes (RandomIoUCrop).
  bool needs_boxes() const { return needs_boxes_; }

  // Whether every pixel op is a horizontal flip (or there is none): then run_pixels()
  // only draws, and touches no pixel.
  bool pixel_ops_are_mirrors() const;
  bool has_tensor_ops() const { return !tensor_.empty(); }
  // The pixel ops on the size x size uint8 sample, in place. Returns whether the sample
  // is still to be mirrored: a drawn flip waits (the store mirrors for free while it
  // writes) until an op that does not commute with mirroring comes.
  // A flip or warp is appended to `moves` when that is not null (a mask follows the sample).
  bool run_pixels(cv::Mat& sample, KeyedRng& rng, fn::Moves* moves = nullptr);
  // The text of the first op whose moves a mask cannot repeat (PixelOp::repeatable); "" when
  // every op's can.
  const std::string& unrepeatable() const { return unrepeatable_; }
  void run_tensor(TensorSample sample, KeyedRng& rng);

  // Times each pixel and tensor op into `profile` from now on, a stage per op (its text as
  // written; a flip that an op forces is that op's time); null: no more. The caller's
  // stage `store`, which comes between the pixel and the tensor ops, is added between
  // them (a profile lists its stages in order): its index is returned.
  std::size_t profile_into(StageProfile* profile, std::string_view store);

 private:
  Pipeline() = default;
  // Files `op`, made of `call`, by its stage (build's order and max_pixels checks).
  Status add(StagedOp op, const OpCall& call, std::uint64_t max_pixels);
  std::vector<std::unique_ptr<GeometryOp>> geometry_;
  std::vector<std::unique_ptr<PixelOp>> pixels_;
  std::vector<std::unique_ptr<TensorOp>> tensor_;
  bool normalise_ = false;
  bool fusable_ = true;
  bool needs_boxes_ = false;
  OpDefaults normalisation_{};
  std::uint32_t size_ = 0;
  std::uint32_t max_size_ = 0;
  std::uint64_t max_pixels_ = 0;
  std::string unrepeatable_;
  std::vector<std::string> op_texts_;  // the pixel ops', then the tensor ops'
  StageProfile* profile_ = nullptr;
  std::vector<std::size_t> op_stages_;  // profile_'s stage of each op of op_texts_
};

}  // namespace forkfeed
