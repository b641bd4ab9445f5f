// dataset_digest(): FNV-1a 64 of the index, written as hex.
#include "dataset/dataset_digest.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

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
  std::uint64_t value() const { return hash_; }

 private:
  static constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

std::string hex16(std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(kDigestDigits, '0');
  for (std::size_t i = kDigestDigits; i-- > 0; value >>= 4) text[i] = kDigits[value & 0xF];
  return text;
}

}  // namespace

std::string dataset_digest(const DatasetIndex& index) {
  Fnv1a64 hash;
  auto add_path = [&](std::string_view path) {
    hash.add(static_cast<std::uint64_t>(path.size()));  // so "a"+"bc" and "ab"+"c" differ
    hash.add(path);
  };
  if (!index.sharded()) {  // as before shards existed: states of folder datasets stay valid
    for (std::size_t i = 0; i < index.size(); ++i) {
      add_path(index.path(i));
      hash.add(static_cast<std::uint64_t>(index.label(i)));
    }
    return hex16(hash.value());
  }
  // Shards: their names and sizes, and where each sample lies, so that a resume against
  // shards rewritten with other contents is refused.
  hash.add(std::string_view("shards"));
  for (std::size_t f = 0; f < index.file_count(); ++f) {
    add_path(index.file(f));
    hash.add(index.shard_stamps()[f].size);
  }
  for (std::size_t i = 0; i < index.size(); ++i) {
    const DatasetIndex::Slice& s = index.slices()[i];
    hash.add(s.file);
    hash.add(s.offset);
    hash.add(s.size);
    hash.add(static_cast<std::uint64_t>(index.label(i)));
  }
  return hex16(hash.value());
}

}  // namespace forkfeed
