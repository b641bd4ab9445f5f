// ContentCache: a header and the entries, in host byte order (a file of another byte order
// fails the magic and is written again):
//   Header (32 bytes): magic, version, check, entry count, checksum of the entries
//   entries: count x Entry (56 bytes)
#include "dataset/content_cache.h"

#include <cstdio>
#include <cstring>

#include "base/fnv1a.h"

namespace forkfeed {
namespace {

constexpr char kMagic[8] = {'F', 'F', 'C', 'O', 'N', 'T', 'N', 'T'};
constexpr std::uint32_t kVersion = 1;
// 20M files; a larger dataset's cache is not read (its files are read again).
constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 30;

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t check;
  std::uint64_t count;
  std::uint64_t checksum;
};
static_assert(sizeof(Header) == 32 && sizeof(ContentCache::Entry) == 56);

// The entries' checksum (IndexCache's kind).
std::uint64_t checksum(std::span<const ContentCache::Entry> entries) {
  return fnv1a_words({reinterpret_cast<const char*>(entries.data()), entries.size_bytes()});
}

}  // namespace

std::uint64_t ContentCache::path_digest(std::string_view path) { return fnv1a(path); }

ContentCache::ContentCache(const CacheFolder& folder, std::string_view dataset, ContentCheck check)
    : folder_(folder), check_(check) {
  char hex[17];
  const std::uint64_t h = fnv1a(to_string(check), fnv1a(std::string_view("\0", 1), fnv1a(dataset)));
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  name_ = std::string(hex) + ".contents";
}

std::vector<ContentCache::Entry> ContentCache::load() const {
  const std::optional<std::string> file = folder_.read(name_, kMaxBytes);
  if (!file || file->size() < sizeof(Header)) return {};
  Header h{};
  std::memcpy(&h, file->data(), sizeof h);
  const std::uint64_t bytes = file->size() - sizeof h;
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kVersion ||
      h.check != static_cast<std::uint32_t>(check_) || bytes % sizeof(Entry) != 0 ||
      h.count != bytes / sizeof(Entry)) {
    return {};
  }
  std::vector<Entry> entries(h.count);
  if (h.count > 0) std::memcpy(entries.data(), file->data() + sizeof h, bytes);
  if (checksum(entries) != h.checksum) return {};
  return entries;
}

Status ContentCache::store(std::span<const Entry> entries) const {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.check = static_cast<std::uint32_t>(check_);
  h.count = entries.size();
  h.checksum = checksum(entries);
  std::string out(sizeof h + entries.size_bytes(), '\0');
  std::memcpy(out.data(), &h, sizeof h);
  if (!entries.empty()) std::memcpy(out.data() + sizeof h, entries.data(), entries.size_bytes());
  return folder_.write(name_, out);
}

}  // namespace forkfeed
