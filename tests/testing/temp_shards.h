// Tar shards made inside a test from an ImageFolder, with the manifest of the same
// samples in the same order: a Loader over either reads the same dataset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace forkfeed::testing {

struct TempShards {
  std::string spec;                // a brace pattern naming every shard
  std::vector<std::string> files;  // the shards, in order
  std::string manifest;            // the same samples, labels and order as a manifest
  std::uint64_t samples = 0;
};

// Packs the ImageFolder at `root` (DatasetIndex order) into shards of `per_shard`
// samples under `dir`: members "<key>.<ext>" and "<key>.cls" for each sample, keys
// "sNNNNN" (or under their class folder with `class_folders`). Fails the test if
// anything cannot be written.
TempShards make_shards(const std::string& dir, const std::string& root, std::uint32_t per_shard,
                       bool class_folders = false);

}  // namespace forkfeed::testing
