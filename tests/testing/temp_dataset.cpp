// Test fixtures: private temporary folders and small synthetic datasets inside them.
#include "tests/testing/temp_dataset.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include "tools/mkdata/synthetic_images.h"

namespace forkfeed::testing {

TempDir::TempDir() {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") + "/forkfeed-test-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    // Without a folder every later path would point somewhere unintended (path_ empty
    // means "/data"), so stop the test here; GoogleTest reports the exception as a failure.
    throw std::runtime_error("mkdtemp(" + pattern + ") failed: " + std::generic_category().message(errno) +
                             "; set TMPDIR to a writable folder");
  }
  path_ = buffer.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  // A destructor cannot fail the test; say what was left behind instead.
  if (ec) std::fprintf(stderr, "warning: could not remove %s: %s\n", path_.c_str(), ec.message().c_str());
}

std::string make_image_folder(const std::string& dir, std::uint32_t images, std::uint32_t classes,
                              std::uint64_t seed, std::uint32_t min_side, std::uint32_t max_side) {
  SyntheticDatasetSpec spec;
  spec.out = dir + "/data";
  spec.images = images;
  spec.classes = classes;
  spec.seed = seed;
  spec.min_side = min_side;
  spec.max_side = max_side;
  spec.special_every = 7;  // small sets still hold grayscale, progressive and PNG files
  if (Status status = write_synthetic_dataset(spec); !status.ok()) {
    ADD_FAILURE() << "make_image_folder(" << spec.out << "): " << status.message();
  }
  return spec.out;
}

DatasetIndex manifest_index(const std::string& dir, const ManifestSamples& samples) {
  const std::string manifest = dir + "/manifest.tsv";
  {
    std::ofstream out(manifest, std::ios::binary | std::ios::trunc);
    for (const auto& [path, label] : samples) out << path << '\t' << label << '\n';
    EXPECT_TRUE(out.good()) << "cannot write " << manifest;
  }
  Result<DatasetIndex> index = DatasetIndex::from_manifest(manifest);
  EXPECT_TRUE(index.ok()) << index.status().message();
  return std::move(index).value_or_throw();
}

}  // namespace forkfeed::testing
