// Test fixtures: a temporary directory removed on destruction, and small synthetic
// ImageFolder datasets made inside it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "forkfeed/dataset.h"

namespace forkfeed::testing {

class TempDir {
 public:
  TempDir();   // mkdtemp under $TMPDIR (or /tmp)
  ~TempDir();  // removes the whole tree
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes a synthetic ImageFolder of `images` small images under `dir`/data and returns
// that root. Fails the current test (ADD_FAILURE) if writing fails.
std::string make_image_folder(const std::string& dir, std::uint32_t images, std::uint32_t classes,
                              std::uint64_t seed = 1, std::uint32_t min_side = 40,
                              std::uint32_t max_side = 120);

// (path, label) pairs, as a manifest lists them.
using ManifestSamples = std::vector<std::pair<std::string, std::int64_t>>;

// An index over `samples` through a manifest written in `dir`; the files need not exist.
// Fails the current test if the manifest cannot be written or read.
DatasetIndex manifest_index(const std::string& dir, const ManifestSamples& samples);

}  // namespace forkfeed::testing
