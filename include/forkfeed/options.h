// LoaderOptions: everything that configures a Loader. All of it is checked by
// validate() before any process or shared memory is created.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "forkfeed/fields.h"
#include "forkfeed/status.h"

namespace forkfeed {

// What a file that cannot be decoded does to its batch.
// fail: the batch is an error naming the file (after every earlier batch was delivered).
// skip: the sample is left out of its batch, counted in LoaderStats::skipped_samples
//       and logged once with its path.
enum class OnError { kFail, kSkip };

// How workers start. fork: a copy of this process. spawn: a fresh forkfeed-worker
// executable that attaches to the arena; safe even after RDMA or CUDA initialised.
// auto: fork when ForkSafety finds the process clean, spawn when it finds a hazard.
// Replacements for dead workers are always spawned: this process may have become
// unsafe to fork since the loader started.
enum class StartMethod { kFork, kSpawn, kAuto };

// What start_method=fork does when ForkSafety finds a hazard: log a warning once, refuse
// to start, or say nothing.
enum class ForkHazardPolicy { kWarn, kError, kIgnore };

// uint8:   RGB, 0..255.
// float32: RGB, (x / 255 - mean) / std.
enum class DType { kUint8, kFloat32 };

// Where a sample's pixels go. nhwc: each pixel's R, G, B together ("channels_last").
// nchw: one plane per channel (what torchvision's ToTensor and PILToTensor give).
// auto: nhwc for uint8, nchw for float32.
enum class Layout { kAuto, kNhwc, kNchw };

// Where a sharded dataset's labels come from (WebDataset's conventions).
// cls:          a member <key>.cls holding a decimal integer (WebDataset's ImageNet shards).
// json:         a member <key>.json, an object whose integer field shard_label_field is it.
// class_folder: the folder part of the key, "n01440764/n01440764_10026" -> class n01440764;
//               labels are positions in the sorted class names, as ImageFolder's.
enum class ShardLabel { kCls, kJson, kClassFolder };

// What of each sample's bytes the dataset's identity sees, which a resumed state and a
// fan-in's daemons compare (docs/datasets.md, "What a dataset is"). windows: a file or
// member of up to 16 KiB whole, a larger one by its first and last 4 KiB, read while
// indexing (a re-encoded or recomputed one differs there). full: every byte, a read of
// the whole dataset at its first open (and of every changed shard or file since).
enum class ContentCheck { kWindows, kFull };

struct LoaderOptions {
  // Exactly one of the three: an ImageFolder root, a manifest of "path<TAB>label" lines,
  // or WebDataset tar shards — a brace pattern ("/data/train-{000000..000146}.tar"), a
  // directory (its *.tar files) or a text file listing them. Shards are indexed once and
  // the index cached under $FORKFEED_CACHE_DIR (default $XDG_CACHE_HOME/forkfeed).
  std::string image_folder;
  std::string manifest;
  std::string shards;
  ShardLabel shard_label = ShardLabel::kCls;
  std::string shard_label_field = "label";  // shard_label=json: the JSON field
  // The named fields each sample is read into (forkfeed/fields.h: parse_fields reads
  // this text), "image=jpg;png, caption=txt, label=cls"; WebDataset shards only. Empty:
  // each sample is one image and one label, as shard_label says.
  std::string fields;
  // What a sample that lacks one of `fields` does: error (bad data, as on_error says),
  // skip (left out of its batch and counted) or empty (an empty value, flagged).
  MissingField missing = MissingField::kError;
  // How much of each sample the dataset's identity reads: ContentCheck.
  ContentCheck content_check = ContentCheck::kWindows;

  std::uint32_t batch_size = 64;
  std::uint32_t workers = 2;
  // Batches in flight per worker; the arena holds workers * prefetch + 1 batch slots,
  // which must fit in half of the machine's memory.
  std::uint32_t prefetch = 2;
  // This loader's share of a shared WorkerPool's time against the other loaders on it,
  // 1 to 1000: one of weight 2 gets twice the worker time of one of weight 1 while both
  // have work. Only the process that runs the loader sets it (forkfeedd's streams: 1).
  std::uint32_t weight = 1;

  // What becomes of each image: a pipeline of torchvision's ops, in their spelling —
  //   "RandomResizedCrop(176), RandomHorizontalFlip(), TrivialAugmentWide(), Normalize(),
  //    RandomErasing(p=0.1)"
  // — or a shorthand: "train" is RandomResizedCrop(size), RandomHorizontalFlip(); "eval"
  // is Resize(round(size / 0.875)), CenterCrop(size). Crops and resizes come first (the
  // decoder does them); Normalize() makes the samples float32; RandomErasing comes after
  // it. Checked at open: an error names the op and the argument. (transforms/op_table.cpp
  // lists every op; docs/transforms.md has what each matches of torchvision.)
  std::string transform = "train";
  // Output height and width; 0: what the transform makes (224 for train and eval). A
  // pipeline must make this size when it is given.
  std::uint32_t size = 0;
  // The longest side a sample may have when the transform's size depends on the image (no
  // final crop or resize to one size: detection's pipelines): each image field's samples
  // then come as a list, each its own height and width (fields only); a larger one is bad
  // data. 0: every sample is the transform's one size.
  std::uint32_t max_size = 0;
  // float32 on a pipeline without Normalize() appends Normalize(mean, std); a pipeline
  // with Normalize() is float32 whatever this says.
  DType dtype = DType::kUint8;
  Layout layout = Layout::kAuto;  // nhwc for uint8, nchw for float32
  std::array<float, 3> mean = {0.485f, 0.456f, 0.406f};
  std::array<float, 3> std = {0.229f, 0.224f, 0.225f};

  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;  // the epoch of the first pass
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  bool shuffle = true;
  // Drops the tail of the dataset that does not divide among ranks (instead of padding
  // by wrapping around) and the last partial batch.
  bool drop_last = false;

  OnError on_error = OnError::kFail;
  StartMethod start_method = StartMethod::kAuto;
  ForkHazardPolicy fork_hazard = ForkHazardPolicy::kWarn;
  // Worker deaths the loader recovers from (replacing the worker, re-issuing its
  // batches); the next one fails the iterator.
  std::uint32_t max_worker_restarts = 8;
  // A worker busy on one sample longer than this is killed and replaced; 0: never.
  std::uint32_t task_timeout_ms = 0;

  // The CUDA device the batch slots are page-locked for (cudaHostRegister), so batches
  // copy to it asynchronously; -1: off. Without CUDA or that device they stay ordinary
  // memory, with one log line saying why; LoaderStats::pinned tells which.
  std::int32_t pin_memory_device = -1;

  // Images with more pixels than this are refused as bad data.
  std::uint64_t max_pixels = 89'478'485;  // PIL's decompression-bomb limit
  // Image files larger than this are refused as bad data before they are read: a worker
  // holds a whole file in memory. 256 MiB is an uncompressed 8-bit RGB image of
  // max_pixels (3 x 89.5M bytes); no compressed training image comes near it.
  std::uint64_t max_file_bytes = std::uint64_t{256} << 20;
  // spdlog level name ("trace" .. "off"); empty: $FORKFEED_LOG_LEVEL, else "info".
  std::string log_level;
};

// Returns the first problem with `options`, phrased so the user can fix it.
Status validate(const LoaderOptions& options);

std::optional<DType> parse_dtype(std::string_view name);
std::optional<OnError> parse_on_error(std::string_view name);
std::optional<StartMethod> parse_start_method(std::string_view name);
std::optional<ForkHazardPolicy> parse_fork_hazard(std::string_view name);
std::optional<ShardLabel> parse_shard_label(std::string_view name);
std::optional<Layout> parse_layout(std::string_view name);
std::optional<ContentCheck> parse_content_check(std::string_view name);
std::string_view to_string(DType dtype);
std::string_view to_string(OnError on_error);
std::string_view to_string(StartMethod method);
std::string_view to_string(ForkHazardPolicy policy);
std::string_view to_string(ShardLabel label);
std::string_view to_string(Layout layout);
std::string_view to_string(ContentCheck check);
// `layout` with auto resolved for `dtype`: never kAuto.
Layout resolve(Layout layout, DType dtype);

}  // namespace forkfeed
