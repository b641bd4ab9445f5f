// The dataset a LoaderOptions names, opened: the one place that turns image_folder,
// manifest or shards into a DatasetIndex, and a user's relative path into the absolute
// one that the index, the order key and forkfeedd see (absolute_path()).
#pragma once

#include <string>
#include <vector>

#include "base/absolute_path.h"
#include "dataset/sample_schema.h"
#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

// The fields of LoaderOptions that say which dataset: exactly one of the three sources,
// and for shards where labels come from. forkfeedd's config names datasets by these.
struct DatasetSource {
  std::string image_folder = {};
  std::string manifest = {};
  std::string shards = {};
  ShardLabel shard_label = ShardLabel::kCls;
  std::string shard_label_field = "label";

  static DatasetSource of(const LoaderOptions& options);
  void apply_to(LoaderOptions& options) const;
  // How many of the three sources are set; exactly one is valid.
  int count() const;
  // The one set (the first, if more are), as the user wrote it: for messages and stats.
  const std::string& path() const;
  // For reports: the path, with "manifest " or "shards " before it for those sources.
  std::string describe() const;
  // Ok, or why not exactly one source is set, naming the flags.
  Status check() const;
};

// The schema of `options`' shards: `fields`, parse_fields' reading of options.fields; an
// error for fields of another source, or beside a shard_label of its own.
Result<SampleSchema> dataset_schema(const LoaderOptions& options, std::vector<FieldSpec> fields);

// The index of `options`' dataset, its samples' fields read by `schema` (StreamPlan's).
// REQUIRES: validate(options) is Ok.
Result<DatasetIndex> open_dataset(const LoaderOptions& options, SampleSchema schema);
// The same, reading the schema of options.fields itself (tests, and tools with no plan).
Result<DatasetIndex> open_dataset(const LoaderOptions& options);

}  // namespace forkfeed
