// index_shards(): list, scan or load from the cache in parallel, then assemble in shard order.
#include "dataset/shards/shard_dataset.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "base/file_stamp.h"
#include "base/logging.h"
#include "base/on_threads.h"
#include "base/out_of_memory.h"
#include "base/printable.h"
#include "base/regular_file.h"
#include "dataset/dataset_index_builder.h"
#include "dataset/shards/index_cache.h"
#include "dataset/shards/shard_list.h"
#include "formats/tar_format.h"
#include "formats/tar_scan.h"

namespace forkfeed {
namespace {

// Threads that scan shards: I/O bound on a cold cache, CPU bound on a warm one.
constexpr unsigned kMaxScanThreads = 8;

// ", 3 samples and 2048000 bytes of damaged shards left out", or "".
std::string skipped_text(std::uint64_t samples, std::uint64_t bytes) {
  if (samples == 0 && bytes == 0) return "";
  std::string text = ", " + std::to_string(samples) + " samples";
  if (bytes > 0)
    text += " and " + std::to_string(bytes) + " bytes of damaged shards (their samples cannot be counted)";
  return text + " left out";
}

struct ShardResult {
  Result<ShardScan> scan = Status::Internal("not scanned");
  FileStamp stamp;  // of the file scanned (or whose cached scan was used)
  bool from_cache = false;
  Status cache_write;  // why the scan could not be cached
};

// Scans shard `position`, open at `fd` (`size` bytes), grouping its members. A damaged
// shard under on_error=skip keeps the samples before the damage (the scan lists only
// whole members; a sample it cut short lacks its image or label, and grouping skips
// it); what lies from the damage on is counted in bytes, since its samples cannot be.
Result<ShardScan> scan_shard(std::uint32_t position, const std::string& path, int fd, std::uint64_t size,
                             const ShardDataset& dataset) {
  std::vector<TarMember> members;
  Status damage = scan_tar(
      fd, path, size,
      [&](TarMember&& m) {
        members.push_back(std::move(m));
        return Status::Ok();
      },
      dataset.check);
  if (!damage.ok() && (damage.code() != Status::Code::kBadData || dataset.on_error != OnError::kSkip))
    return damage;
  const ReadMember read = [&](const TarMember& m) -> Result<std::string> {
    std::string bytes(m.size, '\0');
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n =
          ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(m.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        return Status::FromErrno("reading member '" + printable_cut(m.name) + "' of shard " + path, errno);
      if (n == 0)
        return Status::BadData("shard " + path + " ends inside member '" + printable_cut(m.name) + "'");
      done += static_cast<std::size_t>(n);
    }
    return bytes;
  };
  // With fields, bad samples are kept as skips, on_error=fail too (gather() makes the
  // first one the error, as it does for a cached scan): a field that no shard has is
  // told from every shard's scan before, and says more than its first sample lacking it.
  const OnError on_error = dataset.fields.empty() ? dataset.on_error : OnError::kSkip;
  auto scan = group_samples(position, path, members, dataset.rule, read, on_error, dataset.max_file_bytes,
                            dataset.fields);
  if (scan.ok() && !damage.ok()) {
    const std::uint64_t whole =
        members.empty()
            ? 0
            : (members.back().offset + members.back().size + tar::kBlock - 1) / tar::kBlock * tar::kBlock;
    scan->skipped_bytes += size - std::min(whole, size);
    if (scan->skip_reasons.size() < kMaxSkipReasons) scan->skip_reasons.push_back(damage.message());
  }
  return scan;
}

ShardResult index_one(std::uint32_t position, const std::string& path, const ShardDataset& dataset,
                      const IndexCache* cache) {
  ShardResult out;
  // The stamp and the scan come from one open file: the stamp is that of the bytes scanned.
  Result<RegularFile> file = open_regular_file(path, "shard", {~std::uint64_t{0}, "the limit", ""});
  if (!file.ok()) {
    out.scan = file.status();
    return out;
  }
  auto stamp = stamp_file(file->fd.get());
  if (!stamp.ok()) {
    out.scan = stamp.status().about("shard " + printable(path));
    return out;
  }
  out.stamp = *stamp;
  const CachedShard key{path, *stamp, dataset.rule, dataset.max_file_bytes, dataset.fields, dataset.check};
  if (cache) {
    if (auto cached = cache->load(key, position)) {
      out.scan = std::move(*cached);
      out.from_cache = true;
      return out;
    }
  }
  out.scan = scan_shard(position, path, file->fd.get(), stamp->size, dataset);
  if (cache && out.scan.ok()) out.cache_write = cache->store(key, *out.scan);
  return out;
}

// Indexes every shard on up to kMaxScanThreads threads, each taking the next shard in
// order; results land in the shard's own place.
std::vector<ShardResult> index_all(const std::vector<std::string>& shards, const ShardDataset& dataset,
                                   const IndexCache* cache) {
  const std::size_t n = shards.size();
  std::vector<ShardResult> results(n);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t s; (s = next.fetch_add(1)) < n;) {
      // On a thread of its own: nothing may escape it, an allocation failure included.
      try {
        results[s] = index_one(static_cast<std::uint32_t>(s), shards[s], dataset, cache);
      } catch (const std::bad_alloc&) {
        results[s].scan = out_of_memory("indexing shard " + printable(shards[s]));
      }
    }
  };
  on_threads(std::min<std::size_t>(n, kMaxScanThreads), work);
  return results;
}

// The shards' scans, in shard order, and what they add up to.
struct Gathered {
  std::vector<ShardScan> scans;
  std::size_t samples = 0, from_cache = 0;
  std::uint64_t skipped = 0, skipped_bytes = 0;
  std::vector<std::string> reasons;  // the first kMaxSkipReasons skips
  Status cache_write;                // why a shard could not be cached: the first one
};

// Takes the scans out of `results`: the first shard that failed fails the index, and so
// does a skip under on_error=fail.
Result<Gathered> gather(std::vector<ShardResult>& results, const ShardDataset& dataset) {
  Gathered all;
  all.scans.reserve(results.size());
  for (ShardResult& r : results) {
    if (!r.scan.ok()) return r.scan.status();
    ShardScan& scan = *r.scan;
    // A cache made under on_error=skip answers for fail too: its first skip is the error.
    if ((scan.skipped > 0 || scan.skipped_bytes > 0) && dataset.on_error == OnError::kFail) {
      return Status::BadData(scan.skip_reasons.empty() ? "a shard holds a bad sample"
                                                       : scan.skip_reasons.front());
    }
    all.samples += scan.samples.size();
    all.from_cache += r.from_cache ? 1 : 0;
    all.skipped += scan.skipped;
    all.skipped_bytes += scan.skipped_bytes;
    for (std::string& why : scan.skip_reasons) {
      if (all.reasons.size() < kMaxSkipReasons) all.reasons.push_back(std::move(why));
    }
    if (all.cache_write.ok()) all.cache_write = r.cache_write;
    all.scans.push_back(std::move(scan));
  }
  return all;
}

// Ok unless a field takes extensions that no member of any shard has. Told only when
// every shard was scanned (a failed one's error comes first) and some shard has members.
Status check_fields_found(const std::vector<ShardResult>& results, const ShardDataset& dataset) {
  std::uint32_t seen = 0;
  std::vector<std::string> extensions;
  for (const ShardResult& r : results) {
    if (!r.scan.ok()) return Status::Ok();
    seen |= r.scan->fields_seen;
    extensions.insert(extensions.end(), r.scan->extensions.begin(), r.scan->extensions.end());
  }
  std::sort(extensions.begin(), extensions.end());
  extensions.erase(std::unique(extensions.begin(), extensions.end()), extensions.end());
  if (extensions.empty()) return Status::Ok();  // no member at all: "hold no sample" says it
  const std::vector<FieldSpec>& fields = dataset.fields.fields;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if ((seen >> f) & 1) continue;
    std::string sources, have;
    for (const std::string& s : fields[f].sources) sources += (sources.empty() ? "." : " or .") + s;
    for (std::size_t e = 0; e < extensions.size() && e < kMaxExtensionsKept; ++e)
      have += (have.empty() ? "." : ", .") + printable_cut(extensions[e], 40);
    if (extensions.size() > kMaxExtensionsKept) have += ", ...";
    return Status::InvalidArgument("field \"" + fields[f].name + "\" takes " + sources +
                                   " members, and no shard of " + printable(dataset.spec) +
                                   " has one; their members' extensions are " + have +
                                   ": name one of these in fields");
  }
  return Status::Ok();
}

// Each field's array shape (by field; only array fields' mean anything): the shards'
// dtype, and their common shape or that it varies. InvalidArgument naming a sample of each
// when two shards' arrays have two dtypes.
Result<std::vector<ArrayFieldShape>> array_shapes(const std::vector<ShardScan>& scans,
                                                  const std::vector<std::string>& shards,
                                                  const ShardDataset& dataset) {
  const std::vector<FieldSpec>& fields = dataset.fields.fields;
  std::vector<ArrayFieldShape> shapes(fields.size());
  std::size_t a = 0;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (fields[f].kind != FieldKind::kArray) continue;
    const ShardArrays* first = nullptr;
    std::size_t first_shard = 0;
    for (std::size_t s = 0; s < scans.size(); ++s) {
      const ShardArrays& arrays = scans[s].arrays[a];
      if (!arrays.seen) continue;
      if (first == nullptr) {
        first = &arrays;
        first_shard = s;
        shapes[f] = ArrayFieldShape{arrays.dtype, arrays.varies, arrays.shape};
      } else if (arrays.dtype != first->dtype) {
        return Status::InvalidArgument(
            "field \"" + fields[f].name + "\": sample " + printable_cut(first->first_key) + " of shard " +
            printable(shards[first_shard]) + " holds " + std::string(to_string(first->dtype)) +
            " and sample " + printable_cut(arrays.first_key) + " of shard " + printable(shards[s]) + " " +
            std::string(to_string(arrays.dtype)) +
            "; an array field has one dtype: save its arrays as one (numpy's astype), or take them in two "
            "fields");
      } else if (arrays.varies || arrays.shape != shapes[f].shape) {
        shapes[f].varies = true;
      }
    }
    if (shapes[f].varies) shapes[f].shape.clear();
    ++a;
  }
  return shapes;
}

}  // namespace

LabelRule label_rule(const LoaderOptions& options) {
  switch (options.shard_label) {
    case ShardLabel::kJson: return {LabelSource::kJson, options.shard_label_field};
    case ShardLabel::kClassFolder: return {LabelSource::kClassFolder, {}};
    case ShardLabel::kCls: break;
  }
  return {LabelSource::kCls, {}};
}

Result<DatasetIndex> index_shards(const ShardDataset& dataset) {
  const auto start = std::chrono::steady_clock::now();
  auto shards = list_shards(dataset.spec);
  if (!shards.ok()) return shards.status();
  const std::size_t n = shards->size();
  std::optional<IndexCache> cache;
  if (!dataset.cache_dir.empty()) cache.emplace(dataset.cache_dir);
  std::vector<ShardResult> results = index_all(*shards, dataset, cache ? &*cache : nullptr);
  if (!dataset.fields.empty()) {
    if (Status s = check_fields_found(results, dataset); !s.ok()) return s;
  }
  auto gathered = gather(results, dataset);
  if (!gathered.ok()) return gathered.status();
  Gathered& all = *gathered;
  if (all.samples == 0) {
    return Status::InvalidArgument("the shards of " + printable(dataset.spec) + " hold no sample (" +
                                   std::to_string(n) + " shards" +
                                   skipped_text(all.skipped, all.skipped_bytes) + ")");
  }

  DatasetIndexBuilder builder;
  if (dataset.fields.empty() && dataset.rule.source == LabelSource::kClassFolder)
    builder.set_classes(assign_class_labels(all.scans));
  if (!dataset.fields.empty()) {
    builder.set_fields(dataset.fields.fields, dataset.fields.columns);
    auto shapes = array_shapes(all.scans, *shards, dataset);
    if (!shapes.ok()) return shapes.status();
    builder.set_array_shapes(std::move(shapes).value());
    std::uint32_t longest_key = 0;
    for (const ShardScan& scan : all.scans) longest_key = std::max(longest_key, scan.longest_key);
    builder.set_keys(longest_key);
  }
  builder.set_content_check(dataset.check);
  builder.reserve_slices(all.samples);
  builder.count_skipped(all.skipped, all.skipped_bytes);
  for (std::size_t s = 0; s < n; ++s) {
    ShardScan& scan = all.scans[s];
    const std::uint32_t file = builder.add_shard((*shards)[s], results[s].stamp, scan.content);
    builder.add_name_headers(scan.name_headers, builder.size());
    for (const ShardSample& x : scan.samples) builder.add_slice({x.offset, file, x.size}, x.label);
    builder.add_field_columns(scan.field_slices, scan.field_labels, scan.field_numbers);
    // Peak memory: one copy at a time.
    std::vector<ShardSample>().swap(scan.samples);
    std::vector<FieldSlice>().swap(scan.field_slices);
    std::vector<std::int64_t>().swap(scan.field_labels);
    std::vector<double>().swap(scan.field_numbers);
  }

  auto log = loader_logger();
  if (all.skipped > 0 || all.skipped_bytes > 0) {
    std::string why;
    for (const std::string& r : all.reasons) why += "\n  " + r;
    log->warn("left out of {} (on_error=skip){}; the first:{}", printable(dataset.spec),
              skipped_text(all.skipped, all.skipped_bytes), why);
  }
  if (!all.cache_write.ok()) {
    log->warn("the shard index cache was not written: {}", all.cache_write.message());
  }
  log->info("indexed {} samples in {} shard{} ({} from the cache {}) in {:.2f} s", all.samples, n,
            n == 1 ? "" : "s", all.from_cache, cache ? cache->dir() : std::string("(none)"),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return std::move(builder).finish();
}

}  // namespace forkfeed
