#include "loader/dataset_source.h"

#include <filesystem>
#include <string>
#include <system_error>

#include "loader/shards/index_cache.h"
#include "loader/shards/shard_dataset.h"

namespace forkfeed {

std::string absolute_path(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const auto a = std::filesystem::absolute(path, ec);
  return ec ? path : a.lexically_normal().string();
}

std::string DatasetIndex::describe(std::size_t i) const {
  if (!sharded()) return std::string(path(i));
  return std::string(path(i)) + " (sample at byte " + std::to_string(slices_[i].offset) + ")";
}

DatasetSource DatasetSource::of(const LoaderOptions& o) {
  return {o.image_folder, o.manifest, o.shards, o.shard_label, o.shard_label_field};
}

void DatasetSource::apply_to(LoaderOptions& o) const {
  o.image_folder = image_folder;
  o.manifest = manifest;
  o.shards = shards;
  o.shard_label = shard_label;
  o.shard_label_field = shard_label_field;
}

int DatasetSource::count() const { return !image_folder.empty() + !manifest.empty() + !shards.empty(); }

const std::string& DatasetSource::path() const {
  return !image_folder.empty() ? image_folder : !manifest.empty() ? manifest : shards;
}

std::string DatasetSource::describe() const {
  if (!manifest.empty()) return "manifest " + manifest;
  if (!shards.empty()) return "shards " + shards;
  return image_folder;
}

Status DatasetSource::check() const {
  if (count() != 1) {
    return Status::InvalidArgument(
        "set exactly one dataset source: an ImageFolder root (--data), a manifest (--manifest) or tar shards "
        "(--shards)");
  }
  if (!shards.empty() && shard_label == ShardLabel::kJson && shard_label_field.empty()) {
    return Status::InvalidArgument(
        "shard_label json needs shard_label_field: the JSON field holding the label");
  }
  return Status::Ok();
}

Result<DatasetIndex> open_dataset(const LoaderOptions& options) {
  if (!options.image_folder.empty())
    return DatasetIndex::from_image_folder(absolute_path(options.image_folder));
  if (!options.manifest.empty()) return DatasetIndex::from_manifest(absolute_path(options.manifest));
  return index_shards(ShardDataset{absolute_path(options.shards), label_rule(options), options.on_error,
                                   options.max_file_bytes, IndexCache::default_dir()});
}

}  // namespace forkfeed
