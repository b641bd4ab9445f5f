// DatasetSource and open_dataset(): which dataset the options name, indexed; and how
// messages name a sample of it.
#include "dataset/dataset_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <new>
#include <optional>
#include <string>
#include <vector>

#include "base/file_stamp.h"
#include "base/out_of_memory.h"
#include "base/printable.h"
#include "base/regular_file.h"
#include "base/unique_fd.h"
#include "dataset/cache_folder.h"
#include "dataset/manifest_table.h"
#include "dataset/shards/index_cache.h"
#include "dataset/shards/shard_dataset.h"
#include "formats/tar_scan.h"

namespace forkfeed {

std::string DatasetIndex::describe(std::size_t i) const {
  if (!sharded()) return std::string(path(i));
  const Slice& slice = slices_[i];
  const std::string shard(path(i)), at = " at byte " + std::to_string(slice.offset);
  // The member's name is read from the shard, only while it is the file indexed: a
  // replacement's header there would name another sample.
  std::optional<std::string> member;
  const UniqueFd fd(::open(shard.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  const Result<FileStamp> now = fd.valid() ? stamp_file(fd.get()) : Result<FileStamp>(Status::NotFound(""));
  const SampleSource headers = packed().name_source(i);
  if (now.ok() && *now == shard_stamps_[slice.file] && headers.size <= kMaxNameHeaderBytes) {
    std::vector<std::byte> bytes(headers.size);
    if (::pread(fd.get(), bytes.data(), bytes.size(), static_cast<off_t>(headers.offset)) ==
        static_cast<ssize_t>(bytes.size())) {
      Result<std::string> name = member_name_in(bytes, shard);
      if (name.ok()) member = std::move(name).value();
    }
  }
  return shard + (member ? ", member '" + printable_cut(*member) + "'" : ", member") + at;
}

std::string_view DatasetIndex::file_name(std::size_t f) const {
  const std::string_view path = file(f);
  if (root_.empty() || !path.starts_with(root_)) return path;
  const std::string_view rest = path.substr(root_.size());
  if (root_.ends_with('/')) return rest;                 // "/", or a root given with its slash
  return rest.starts_with('/') ? rest.substr(1) : path;  // "/data/xy" is not under "/data/x"
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
        "set exactly one dataset source: an ImageFolder root, a manifest or tar shards (" +
        std::to_string(count()) + " are set)");
  }
  for (const auto& [what, path] :
       {std::pair{"the ImageFolder root", &image_folder}, std::pair{"the manifest", &manifest},
        std::pair{"the shard spec", &shards}}) {
    if (Status s = check_no_nul(what, *path); !s.ok()) return s;
  }
  if (!shards.empty() && shard_label == ShardLabel::kJson && shard_label_field.empty()) {
    return Status::InvalidArgument(
        "shard_label json needs shard_label_field: the JSON field holding the label");
  }
  return Status::Ok();
}

Result<SampleSchema> dataset_schema(const LoaderOptions& options, std::vector<FieldSpec> fields) {
  if (fields.empty()) return SampleSchema{};
  if (!options.manifest.empty()) {
    return Status::InvalidArgument("fields are read from WebDataset shards: " + std::string(kPackTableHint) +
                                   "; or leave fields empty for a manifest of 'path<TAB>label' lines");
  }
  if (!options.image_folder.empty()) {
    return Status::InvalidArgument(
        "fields are read from WebDataset shards; an ImageFolder's samples are an image and its label: leave "
        "fields empty");
  }
  if (options.shard_label != ShardLabel::kCls) {
    return Status::InvalidArgument("shard_label " + std::string(to_string(options.shard_label)) +
                                   " is for shards without fields; with fields, the label is a field: "
                                   "\"label=cls\" or \"label=json:label(KEY)\"");
  }
  return sample_schema(std::move(fields), options.missing);
}

Result<DatasetIndex> open_dataset(const LoaderOptions& options) {
  auto fields = options.fields.empty() ? Result<std::vector<FieldSpec>>(std::vector<FieldSpec>{})
                                       : parse_fields(options.fields);
  if (!fields.ok()) return fields.status();
  auto schema = dataset_schema(options, std::move(fields).value());
  if (!schema.ok()) return schema.status();
  return open_dataset(options, std::move(schema).value());
}

Result<DatasetIndex> open_dataset(const LoaderOptions& options, SampleSchema schema) {
  const DatasetSource source = DatasetSource::of(options);
  try {
    if (!options.image_folder.empty()) {
      return DatasetIndex::from_image_folder(absolute_path(options.image_folder), options.content_check,
                                             CacheFolder::default_dir("file-contents"));
    }
    if (!options.manifest.empty()) {
      return DatasetIndex::from_manifest(absolute_path(options.manifest), options.content_check,
                                         CacheFolder::default_dir("file-contents"));
    }
    return index_shards(ShardDataset{absolute_path(options.shards), label_rule(options), options.on_error,
                                     options.max_file_bytes, IndexCache::default_dir(), std::move(schema),
                                     options.content_check});
  } catch (const std::bad_alloc&) {
    return out_of_memory("building the index of " + printable(source.describe()));
  }
}

}  // namespace forkfeed
