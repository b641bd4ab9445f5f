// dataset_identity(): FNV-1a 64 digests of an index's names, labels, sizes and content
// digests, by range and whole, and the digest of absolute paths that version-1 states hold.
#include "dataset/dataset_identity.h"

#include "base/printable.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace forkfeed {
namespace {

class Fnv1a64 {
 public:
  void add(std::string_view bytes) {
    for (const char c : bytes) {
      hash_ ^= static_cast<unsigned char>(c);
      hash_ *= kPrime;
    }
  }
  // Little-endian, so the digest is the same on every machine that reads the state.
  void add(std::uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= (value >> (8 * i)) & 0xFF;
      hash_ *= kPrime;
    }
  }
  // The length first, so that "a"+"bc" and "ab"+"c" differ.
  void add_name(std::string_view name) {
    add(static_cast<std::uint64_t>(name.size()));
    add(name);
  }
  std::uint64_t value() const { return hash_; }

 private:
  static constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

std::string hex(std::uint64_t value, std::size_t digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(digits, '0');
  for (std::size_t i = digits; i-- > 0; value >>= 4) text[i] = kDigits[value & 0xF];
  return text;
}

// The digest version-1 states hold: FNV-1a 64 over every path (absolute, as stored) and
// label, in index order; for shards, over the shards' paths and sizes, then every
// sample's slice and label. Its definition is fixed: old states are checked with it.
std::string legacy_digest(const DatasetIndex& index) {
  Fnv1a64 hash;
  if (!index.sharded()) {
    for (std::size_t i = 0; i < index.size(); ++i) {
      hash.add_name(index.path(i));
      hash.add(static_cast<std::uint64_t>(index.label(i)));
    }
    return hex(hash.value(), kDigestDigits);
  }
  hash.add(std::string_view("shards"));
  for (std::size_t f = 0; f < index.file_count(); ++f) {
    hash.add_name(index.file(f));
    hash.add(index.shard_stamps()[f].size);
  }
  for (std::size_t i = 0; i < index.size(); ++i) {
    const DatasetIndex::Slice& s = index.slices()[i];
    hash.add(s.file);
    hash.add(s.offset);
    hash.add(s.size);
    hash.add(static_cast<std::uint64_t>(index.label(i)));
  }
  return hex(hash.value(), kDigestDigits);
}

std::string range_digest(const Fnv1a64& range) {
  return hex(range.value() ^ (range.value() >> 32), kRangeDigits);
}

// The schema's text, into the labels' digest; the text as a state and a message show it.
std::string add_schema(const DatasetIndex& index, Fnv1a64& labels) {
  const std::string text = fields_text(index.fields());
  labels.add(std::string_view("fields"));
  labels.add_name(text);
  return printable(text);
}

// Sample i's name: a file's relative name, or its shard's (hashed once, `shard_names`)
// and its offset there.
Fnv1a64 sample_name(const DatasetIndex& index, std::size_t i, const std::vector<Fnv1a64>& shard_names) {
  Fnv1a64 name;
  if (index.sharded()) {
    name = shard_names[index.slices()[i].file];
    name.add(index.slices()[i].offset);
  } else {
    name.add_name(index.name(i));
  }
  return name;
}

// Sample i's fields beyond its first member and label: its other members' sizes into the
// sizes, its other labels and its numbers into the labels, all into its range.
void add_field_values(const DatasetIndex& index, std::size_t i, Fnv1a64& sizes, Fnv1a64& labels,
                      Fnv1a64& range) {
  const FieldColumns& columns = index.field_columns();
  for (std::uint32_t k = 0; k < columns.extra_members(); ++k) {
    const std::uint64_t member = index.field_slices()[i * columns.extra_members() + k].size;
    sizes.add(member);
    range.add(member);
  }
  for (std::uint32_t k = 0; k < columns.extra_labels(); ++k) {
    const auto value = static_cast<std::uint64_t>(index.field_labels()[i * columns.extra_labels() + k]);
    labels.add(value);
    range.add(value);
  }
  for (std::uint32_t k = 0; k < columns.numbers; ++k) {
    const auto value = std::bit_cast<std::uint64_t>(index.field_numbers()[i * columns.numbers + k]);
    labels.add(value);
    range.add(value);
  }
}

}  // namespace

std::uint64_t identity_range_samples(std::uint64_t samples) {
  std::uint64_t range = 1;
  while (samples / range + (samples % range != 0) > kMaxRanges) range *= 2;
  return range;
}

DatasetIdentity dataset_identity(const DatasetIndex& index) {
  DatasetIdentity id;
  id.samples = index.size();
  id.range_samples = identity_range_samples(id.samples);
  id.ranges.reserve(id.ranges_for_samples() * kRangeDigits);

  // A shard's name is hashed once; each of its members adds its offset to that.
  std::vector<Fnv1a64> shard_names;
  Fnv1a64 names, labels, sizes, range, content, content_range;
  const std::vector<std::uint64_t>& contents = index.contents();
  id.content_check = to_string(index.content_check());
  content.add_name(id.content_check);
  // A file's content is its sample's; a shard's is in the range of each of its samples
  // (and of the next sample, for a shard of none), and once in the whole.
  std::size_t next_shard = 0;  // the first shard not yet in the whole
  const auto add_shards_through = [&](std::size_t last) {
    for (; next_shard <= last; ++next_shard) {
      content.add(contents[next_shard]);
      if (next_shard < last) content_range.add(contents[next_shard]);  // one of no samples
    }
  };
  // With fields, what each sample is depends on them: their text goes into the labels,
  // each sample's other members' sizes into the sizes, its other labels and numbers into
  // the labels. Without, the digests are what they always were.
  const bool fields = !index.fields().empty();
  if (fields) id.fields = add_schema(index, labels);
  if (index.sharded()) {
    shard_names.resize(index.file_count());
    sizes.add(std::string_view("shards"));
    for (std::size_t f = 0; f < index.file_count(); ++f) {
      shard_names[f].add_name(index.file_name(f));
      sizes.add(index.shard_stamps()[f].size);
    }
  }
  for (std::size_t i = 0; i < id.samples; ++i) {
    const Fnv1a64 name = sample_name(index, i, shard_names);
    const auto label = static_cast<std::uint64_t>(index.label(i));
    const std::uint64_t bytes = index.bytes(i);
    names.add(name.value());
    labels.add(label);
    sizes.add(bytes);
    range.add(name.value());
    range.add(label);
    range.add(bytes);
    if (!index.sharded()) {
      content.add(contents[i]);
      content_range.add(contents[i]);
    } else {
      const std::uint32_t shard = index.slices()[i].file;
      if (shard >= next_shard) add_shards_through(shard);
      content_range.add(contents[shard]);
    }
    if (fields) add_field_values(index, i, sizes, labels, range);
    if (i + 1 == id.samples && index.sharded()) {  // shards after the last sample's hold none
      for (; next_shard < contents.size(); ++next_shard) {
        content.add(contents[next_shard]);
        content_range.add(contents[next_shard]);
      }
    }
    if ((i + 1) % id.range_samples == 0 || i + 1 == id.samples) {
      id.ranges += range_digest(range);
      id.content_ranges += range_digest(content_range);
      range = Fnv1a64();
      content_range = Fnv1a64();
    }
  }
  // A file whose content could not be read while indexing (0) leaves the contents out:
  // compared by names, labels and sizes, the dataset resumes once the file reads again.
  if (std::find(contents.begin(), contents.end(), 0) == contents.end()) {
    id.content = hex(content.value(), kDigestDigits);
  } else {
    id.content_check.clear();
    id.content_ranges.clear();
  }
  id.names = hex(names.value(), kDigestDigits);
  id.labels = hex(labels.value(), kDigestDigits);
  id.sizes = hex(sizes.value(), kDigestDigits);
  id.legacy = legacy_digest(index);
  return id;
}

}  // namespace forkfeed
