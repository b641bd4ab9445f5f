// IndexCache: one file per shard holding its grouped samples. Layout, in host byte order
// (a file from another byte order fails the magic and is rebuilt):
//   FileHeader (168 bytes)
//   strings: shard path, json field, fields text, class names, skip reasons, member
//            extensions; each a u32 length and its bytes; zero-padded to a multiple of 8
//   records: sample_count ShardSamples of 24 bytes, their `shard` field 0; then, with
//            fields, sample_count x extra_members FieldSlices, x extra_labels int64
//            labels and x numbers float64 numbers (8 bytes each); name_header_count
//            NameHeaders (16 bytes); array_count ArrayRecords (56 bytes), whose samples'
//            keys are the strings after the extensions
// The checksum covers strings and records, so a torn or bit-flipped file is a miss.
#include "dataset/shards/index_cache.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "base/fnv1a.h"
#include "base/option_names.h"

namespace forkfeed {
namespace {

constexpr char kIndexMagic[8] = {'F', 'F', 'S', 'H', 'A', 'R', 'D', '1'};
// 2: the whole FileStamp, and skipped_bytes. 3: fields. 4: keys' lengths and long names,
// arrays' dtypes and shapes. 5: the shard's content digest and the check that read it.
constexpr std::uint32_t kIndexVersion = 5;
// ~44M samples in one shard; a larger file is not read (and the shard is scanned).
constexpr std::uint64_t kMaxCacheBytes = std::uint64_t{1} << 30;

struct FileHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t label_source;
  FileStamp shard;
  std::uint64_t max_file_bytes;
  std::uint64_t sample_count;
  std::uint64_t skipped;
  std::uint64_t skipped_bytes;
  std::uint32_t class_count;
  std::uint32_t reason_count;
  std::uint64_t strings_bytes;  // with the padding
  std::uint64_t checksum;
  // With fields (else 0): `missing`, ShardScan::fields_seen, how many extensions the
  // strings hold, and the columns each sample has beyond its ShardSample.
  std::uint32_t missing;
  std::uint32_t fields_seen;
  std::uint32_t extension_count;
  std::uint32_t extra_members;
  std::uint32_t extra_labels;
  std::uint32_t numbers;
  // With fields: ShardScan::longest_key, its array fields (one ArrayRecord each) and its
  // NameHeaders.
  std::uint32_t longest_key;
  std::uint32_t array_count;
  std::uint64_t name_header_count;
  // ShardScan::content, read as CachedShard::check says (its ContentCheck, and 0 for padding).
  std::uint64_t content;
  std::uint32_t content_check;
  std::uint32_t reserved;
};
static_assert(sizeof(FileHeader) == 168 && sizeof(FileStamp) == 40);

// ShardArrays without its key.
struct ArrayRecord {
  std::uint8_t seen;
  std::uint8_t varies;
  std::uint8_t dtype;
  std::uint8_t rank;
  std::uint32_t reserved;
  std::int64_t shape[kMaxArrayRank];
};
static_assert(sizeof(ArrayRecord) == 56 && sizeof(NameHeaders) == 16);
static_assert(sizeof(ShardSample) == 24 && alignof(ShardSample) == 8);
static_assert(sizeof(FieldSlice) == 8 && sizeof(double) == 8);

void put_string(std::string& out, std::string_view s) {
  const auto n = static_cast<std::uint32_t>(s.size());
  out.append(reinterpret_cast<const char*>(&n), 4);
  out += s;
}

// Reads the strings section; false when it is malformed.
class StringReader {
 public:
  explicit StringReader(std::string_view bytes) : rest_(bytes) {}
  bool next(std::string& out) {
    std::uint32_t n = 0;
    if (rest_.size() < 4) return false;
    std::memcpy(&n, rest_.data(), 4);
    if (rest_.size() - 4 < n) return false;
    out.assign(rest_.substr(4, n));
    rest_.remove_prefix(4 + std::size_t{n});
    return true;
  }
  bool only_padding_left() const {
    return rest_.size() < 8 && rest_.find_first_not_of('\0') == std::string_view::npos;
  }

 private:
  std::string_view rest_;
};

}  // namespace

std::string IndexCache::default_dir() { return CacheFolder::default_dir("shard-index"); }

IndexCache::IndexCache(std::string dir) : folder_(std::move(dir), "the shard index cache") {}

std::string IndexCache::file_for(const CachedShard& shard) const {
  return folder_.dir() + "/" + name_for(shard);
}

std::string IndexCache::name_for(const CachedShard& shard) const {
  std::uint64_t h = fnv1a(shard.path);
  const char source = static_cast<char>(shard.rule.source);
  h = fnv1a(std::string_view("\0", 1), h);
  h = fnv1a(std::string_view(&source, 1), h);
  h = fnv1a(shard.rule.json_field, h);
  h = fnv1a(std::string_view("\0", 1), h);
  h = fnv1a(std::to_string(shard.max_file_bytes), h);
  if (!shard.fields.empty()) {  // without fields, the name it always had
    h = fnv1a(std::string_view("\0fields\0", 8), h);
    h = fnv1a(shard.fields.text, h);
    h = fnv1a(to_string(shard.fields.missing), h);
  }
  if (shard.check != ContentCheck::kWindows) {  // a full check's scan beside the windows' one
    h = fnv1a(std::string_view("\0content\0", 9), h);
    h = fnv1a(to_string(shard.check), h);
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return std::string(hex) + ".idx";
}

namespace {

// The counts a file for `shard` has in its header: 0 without fields.
struct FieldCounts {
  std::uint32_t missing = 0, extra_members = 0, extra_labels = 0, numbers = 0, arrays = 0;
  explicit FieldCounts(const SampleSchema& fields) {
    if (fields.empty()) return;
    missing = static_cast<std::uint32_t>(fields.missing);
    extra_members = fields.columns.extra_members();
    extra_labels = fields.columns.extra_labels();
    numbers = fields.columns.numbers;
    for (const FieldSpec& f : fields.fields) arrays += f.kind == FieldKind::kArray ? 1 : 0;
  }
  // Bytes of one sample's records.
  std::uint64_t record_bytes() const {
    return sizeof(ShardSample) + std::uint64_t{8} * (extra_members + extra_labels + numbers);
  }
};

// Copies `n` values of T from `bytes` at `at` into `out`, moving `at` on.
template <typename T>
void copy_out(std::string_view bytes, std::size_t& at, std::size_t n, std::vector<T>& out) {
  out.resize(n);
  if (n > 0) std::memcpy(out.data(), bytes.data() + at, n * sizeof(T));  // data() of an empty one may be null
  at += n * sizeof(T);
}

template <typename T>
void append(std::string& out, const std::vector<T>& values) {
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// Whether the cache file `bytes`, whose header is `h`, was written for `shard` as it is
// (its rule, stamp, limits, fields and content check) and holds as many bytes as its
// counts say, unchanged since (its checksum).
bool header_is_for(const FileHeader& h, const CachedShard& shard, const FieldCounts& counts,
                   std::string_view bytes) {
  if (std::memcmp(h.magic, kIndexMagic, sizeof(kIndexMagic)) != 0 || h.version != kIndexVersion ||
      h.label_source != static_cast<std::uint32_t>(shard.rule.source) || h.shard != shard.stamp ||
      h.max_file_bytes != shard.max_file_bytes || h.missing != counts.missing ||
      h.extra_members != counts.extra_members || h.extra_labels != counts.extra_labels ||
      h.numbers != counts.numbers || h.array_count != counts.arrays ||
      h.content_check != static_cast<std::uint32_t>(shard.check)) {
    return false;
  }
  const std::uint64_t payload = bytes.size() - sizeof(FileHeader);
  const std::uint64_t arrays_bytes = std::uint64_t{h.array_count} * sizeof(ArrayRecord);
  return h.strings_bytes % 8 == 0 && h.strings_bytes <= payload &&
         h.sample_count <= payload / counts.record_bytes() && h.name_header_count <= h.sample_count &&
         h.strings_bytes + h.sample_count * counts.record_bytes() +
                 h.name_header_count * sizeof(NameHeaders) + arrays_bytes ==
             payload &&
         fnv1a_words(bytes.substr(sizeof(FileHeader))) == h.checksum;
}

}  // namespace

std::optional<ShardScan> IndexCache::load(const CachedShard& shard, std::uint32_t position) const {
  const std::optional<std::string> file = folder_.read(name_for(shard), kMaxCacheBytes);
  if (!file || file->size() < sizeof(FileHeader)) return std::nullopt;
  const std::string_view bytes = *file;
  FileHeader h{};
  std::memcpy(&h, bytes.data(), sizeof(h));
  const FieldCounts counts(shard.fields);
  if (!header_is_for(h, shard, counts, bytes)) return std::nullopt;
  const bool class_folder = shard.fields.empty() && shard.rule.source == LabelSource::kClassFolder;
  if (!class_folder && h.class_count != 0) return std::nullopt;

  StringReader strings(bytes.substr(sizeof(FileHeader), h.strings_bytes));
  std::string path, json_field, fields;
  if (!strings.next(path) || path != shard.path || !strings.next(json_field) ||
      json_field != shard.rule.json_field || !strings.next(fields) || fields != shard.fields.text) {
    return std::nullopt;  // another shard, field or schema whose file name hashed the same
  }
  ShardScan scan;
  scan.content = h.content;
  scan.skipped = h.skipped;
  scan.skipped_bytes = h.skipped_bytes;
  scan.fields_seen = h.fields_seen;
  scan.longest_key = h.longest_key;
  // Each string takes at least 4 bytes, which bounds the counts before anything is reserved.
  if (h.class_count > h.strings_bytes / 4 || h.reason_count > h.strings_bytes / 4 ||
      h.extension_count > kMaxExtensionsKept) {
    return std::nullopt;
  }
  scan.class_names.resize(h.class_count);
  scan.skip_reasons.resize(h.reason_count);
  scan.extensions.resize(h.extension_count);
  std::vector<std::string> array_keys(h.array_count);
  for (auto* list : {&scan.class_names, &scan.skip_reasons, &scan.extensions, &array_keys}) {
    for (std::string& s : *list) {
      if (!strings.next(s)) return std::nullopt;
    }
  }
  if (!strings.only_padding_left()) return std::nullopt;

  std::size_t at = sizeof(FileHeader) + h.strings_bytes;
  copy_out(bytes, at, h.sample_count, scan.samples);
  copy_out(bytes, at, h.sample_count * counts.extra_members, scan.field_slices);
  copy_out(bytes, at, h.sample_count * counts.extra_labels, scan.field_labels);
  copy_out(bytes, at, h.sample_count * counts.numbers, scan.field_numbers);
  copy_out(bytes, at, h.name_header_count, scan.name_headers);
  for (std::size_t k = 0; k < scan.name_headers.size(); ++k) {
    const NameHeaders& n = scan.name_headers[k];
    if (n.sample >= h.sample_count || (k > 0 && n.sample <= scan.name_headers[k - 1].sample) ||
        n.bytes <= kTarHeaderBytes || n.bytes > kMaxNameHeaderBytes) {
      return std::nullopt;
    }
  }
  std::vector<ArrayRecord> arrays;
  copy_out(bytes, at, h.array_count, arrays);
  for (std::size_t a = 0; a < arrays.size(); ++a) {
    const ArrayRecord& r = arrays[a];
    if (r.seen > 1 || r.varies > 1 || r.dtype > static_cast<std::uint8_t>(ElementType::kFloat64) ||
        r.rank > kMaxArrayRank) {
      return std::nullopt;
    }
    scan.arrays.push_back(ShardArrays{r.seen == 1, r.varies == 1, static_cast<ElementType>(r.dtype),
                                      std::vector<std::int64_t>(r.shape, r.shape + r.rank),
                                      std::move(array_keys[a])});
  }
  for (ShardSample& s : scan.samples) {
    // assign_class_labels indexes class_names by these labels.
    if (class_folder && (s.label < 0 || static_cast<std::uint64_t>(s.label) >= h.class_count))
      return std::nullopt;
    s.shard = position;
  }
  return scan;
}

Status IndexCache::store(const CachedShard& shard, const ShardScan& scan) const {
  const FieldCounts counts(shard.fields);
  const std::size_t samples = scan.samples.size();
  if (scan.field_slices.size() != samples * counts.extra_members ||
      scan.field_labels.size() != samples * counts.extra_labels ||
      scan.field_numbers.size() != samples * counts.numbers || scan.arrays.size() != counts.arrays) {
    return Status::Internal("a shard's scan does not have the columns of its fields");
  }
  std::string out(sizeof(FileHeader), '\0');
  put_string(out, shard.path);
  put_string(out, shard.rule.json_field);
  put_string(out, shard.fields.text);
  for (const std::string& s : scan.class_names) put_string(out, s);
  for (const std::string& s : scan.skip_reasons) put_string(out, s);
  const std::size_t extensions = std::min(scan.extensions.size(), kMaxExtensionsKept);
  for (std::size_t e = 0; e < extensions; ++e) put_string(out, scan.extensions[e]);
  for (const ShardArrays& a : scan.arrays) put_string(out, a.first_key);
  out.resize((out.size() + 7) / 8 * 8, '\0');
  FileHeader h{};
  std::memcpy(h.magic, kIndexMagic, sizeof(kIndexMagic));
  h.version = kIndexVersion;
  h.label_source = static_cast<std::uint32_t>(shard.rule.source);
  h.shard = shard.stamp;
  h.max_file_bytes = shard.max_file_bytes;
  h.sample_count = samples;
  h.skipped = scan.skipped;
  h.skipped_bytes = scan.skipped_bytes;
  h.class_count = static_cast<std::uint32_t>(scan.class_names.size());
  h.reason_count = static_cast<std::uint32_t>(scan.skip_reasons.size());
  h.strings_bytes = out.size() - sizeof(FileHeader);
  h.missing = counts.missing;
  h.fields_seen = scan.fields_seen;
  h.extension_count = static_cast<std::uint32_t>(extensions);
  h.extra_members = counts.extra_members;
  h.extra_labels = counts.extra_labels;
  h.numbers = counts.numbers;
  h.longest_key = scan.longest_key;
  h.array_count = counts.arrays;
  h.name_header_count = scan.name_headers.size();
  h.content = scan.content;
  h.content_check = static_cast<std::uint32_t>(shard.check);
  const std::size_t records = out.size();
  out.resize(records + samples * sizeof(ShardSample));
  char* record = out.data() + records;
  for (ShardSample s : scan.samples) {
    s.shard = 0;  // the position is the caller's, given again on load
    std::memcpy(record, &s, sizeof(s));
    record += sizeof(s);
  }
  append(out, scan.field_slices);
  append(out, scan.field_labels);
  append(out, scan.field_numbers);
  append(out, scan.name_headers);
  for (const ShardArrays& a : scan.arrays) {
    ArrayRecord r{};
    r.seen = a.seen ? 1 : 0;
    r.varies = a.varies ? 1 : 0;
    r.dtype = static_cast<std::uint8_t>(a.dtype);
    r.rank = static_cast<std::uint8_t>(std::min(a.shape.size(), kMaxArrayRank));
    std::copy_n(a.shape.begin(), r.rank, r.shape);
    out.append(reinterpret_cast<const char*>(&r), sizeof r);
  }
  h.checksum = fnv1a_words(std::string_view(out).substr(sizeof(FileHeader)));
  std::memcpy(out.data(), &h, sizeof(h));
  if (out.size() > kMaxCacheBytes) return Status::ResourceExhausted("shard index too large to cache");

  return folder_.write(name_for(shard), out);
}

}  // namespace forkfeed
