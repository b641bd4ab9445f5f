#include "tests/testing/temp_shards.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "base/regular_file.h"
#include "forkfeed/dataset.h"
#include "tools/shard/tar_writer.h"

namespace forkfeed::testing {

TempShards make_shards(const std::string& dir, const std::string& root, std::uint32_t per_shard,
                       bool class_folders) {
  TempShards out;
  auto index = DatasetIndex::from_image_folder(root);
  if (!index.ok()) {
    ADD_FAILURE() << index.status().message();
    return out;
  }
  std::ofstream manifest(dir + "/same.tsv");
  const std::size_t shards = (index->size() + per_shard - 1) / per_shard;
  char name[64];
  std::snprintf(name, sizeof name, "/shard-{00000..%05zu}.tar", shards - 1);
  out.spec = dir + name;
  for (std::size_t s = 0; s < shards; ++s) {
    std::snprintf(name, sizeof name, "/shard-%05zu.tar", s);
    out.files.push_back(dir + name);
    auto writer = TarWriter::create(out.files.back());
    if (!writer.ok()) {
      ADD_FAILURE() << writer.status().message();
      return out;
    }
    for (std::size_t i = s * per_shard; i < std::min<std::size_t>(index->size(), (s + 1) * per_shard); ++i) {
      const std::string path(index->path(i));
      auto bytes = read_regular_file(path, "image", {std::uint64_t{1} << 30, "the limit", ""});
      if (!bytes.ok()) {
        ADD_FAILURE() << bytes.status().message();
        return out;
      }
      std::snprintf(name, sizeof name, "s%05zu", i);
      const std::string cls = std::to_string(index->label(i));
      const std::string key =
          (class_folders ? index->classes()[index->label(i)] + "/" : std::string()) + name;
      const std::string ext = path.substr(path.rfind('.'));
      const auto* data = reinterpret_cast<const std::byte*>(bytes->data());
      EXPECT_TRUE(writer->add(key + ext, {data, bytes->size()}).ok());
      EXPECT_TRUE(
          writer->add(key + ".cls", {reinterpret_cast<const std::byte*>(cls.data()), cls.size()}).ok());
      manifest << path << '\t' << index->label(i) << '\n';
      ++out.samples;
    }
    EXPECT_TRUE(writer->finish().ok());
  }
  out.manifest = dir + "/same.tsv";
  return out;
}

}  // namespace forkfeed::testing
