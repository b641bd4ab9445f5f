// A dataset of WebDataset tar shards, indexed: the shards named by a spec, each scanned
// once (in parallel) or read from the index cache, grouped into samples, and put into a
// DatasetIndex whose samples are slices of shards — 24 bytes each, no path.
#pragma once

#include <string>

#include "dataset/shards/shard_samples.h"
#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

struct ShardDataset {
  std::string spec;  // list_shards(): a brace pattern, a directory or a list file
  LabelRule rule;
  OnError on_error = OnError::kFail;
  std::uint64_t max_file_bytes = 0;
  std::string cache_dir;  // "" : no cache
  // The fields of each sample (empty: an image and a label, by `rule`).
  SampleSchema fields = {};
  // How much of each member the shard's content digest reads (ShardScan::content).
  ContentCheck check = ContentCheck::kWindows;
};

// The label rule LoaderOptions ask for.
LabelRule label_rule(const LoaderOptions& options);

// Indexes `dataset`. A shard that is not a tar, is truncated or holds a bad sample is
// BadData naming the shard and the member; with on_error=skip the bad samples (and the
// unreadable rest of a damaged shard) are left out, counted and logged once here. With
// fields, a field that no member of any shard has is refused (InvalidArgument) naming it
// and the extensions the shards have.
Result<DatasetIndex> index_shards(const ShardDataset& dataset);

}  // namespace forkfeed
