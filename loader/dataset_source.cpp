#include "loader/dataset_source.h"

#include <filesystem>
#include <string>
#include <system_error>

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

Result<DatasetIndex> open_dataset(const LoaderOptions& options) {
  if (!options.image_folder.empty()) return DatasetIndex::from_image_folder(absolute_path(options.image_folder));
  return DatasetIndex::from_manifest(absolute_path(options.manifest));
}

}  // namespace forkfeed
