// dataset_difference(): whether two identities are one dataset, and if not, what differs
// (the count, the fields, names, labels, sizes, contents) and in which samples, in words.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/printable.h"
#include "dataset/dataset_identity.h"

namespace forkfeed {
namespace {

// Ranges named in a message; the others are counted.
constexpr std::size_t kRangesNamed = 3;
// A name in a message is cut to this many bytes.
constexpr std::size_t kNameBytes = 80;

// "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " and " : ", ";
    out += words[i];
  }
  return out;
}

// Sample `i` of `index` in a message: its name under the root; a shard's member by its
// name and place in the shard (a shard's name alone is many samples').
std::string sample_text(const DatasetIndex& index, std::uint64_t i) {
  return index.sharded() ? index.describe(i) : printable_cut(index.name(i), kNameBytes);
}

// "64-95 (cls/a.jpg .. cls/z.jpg)", or "7 (cls/a.jpg)"; the names when `index` has them.
std::string range_text(std::uint64_t first, std::uint64_t last, const DatasetIndex* index) {
  std::string text = std::to_string(first);
  if (last != first) {  // (not "-" + std::to_string(): GCC 12 warns falsely, -Wrestrict)
    text += '-';
    text += std::to_string(last);
  }
  if (index != nullptr && last < index->size()) {
    text += " (" + sample_text(*index, first);
    if (last != first) text += " .. " + sample_text(*index, last);
    text += ")";
  }
  return text;
}

// " in samples 64-95 (...), 128-159 (...) and 5 more ranges of 32 samples", or "" when
// the two are cut into ranges of different sizes (their counts are far apart); by the
// range digests of `member` (DatasetIdentity::ranges or ::content_ranges).
std::string where(const DatasetIdentity& a, const DatasetIdentity& b, const DatasetIndex* b_index,
                  std::string DatasetIdentity::*member = &DatasetIdentity::ranges) {
  if (a.range_samples != b.range_samples) return "";
  const std::uint64_t size = a.range_samples, samples = std::max(a.samples, b.samples);
  const std::uint64_t ranges = std::max(a.range_count(), b.range_count());
  const auto digest = [&](const DatasetIdentity& id, std::uint64_t r) {
    return r < id.range_count() ? std::string_view(id.*member).substr(r * kRangeDigits, kRangeDigits)
                                : std::string_view();
  };
  std::vector<std::string> named;
  std::uint64_t more = 0;
  bool plural = false;
  for (std::uint64_t r = 0; r < ranges; ++r) {
    if (digest(a, r) == digest(b, r)) continue;
    if (named.size() == kRangesNamed) {
      ++more;
      continue;
    }
    // Ranges that differ one after another are named as one run (a shard's samples).
    std::uint64_t end = r + 1;
    while (end < ranges && digest(a, end) != digest(b, end)) ++end;
    const std::uint64_t first = r * size, last = std::min(end * size, samples) - 1;
    plural = plural || last != first || !named.empty();
    named.push_back(range_text(first, last, b_index));
    r = end - 1;
  }
  if (named.empty()) return "";
  if (more > 0) {
    named.push_back(std::to_string(more) + " more range" + (more == 1 ? "" : "s") + " of " +
                    std::to_string(size) + " sample" + (size == 1 ? "" : "s"));
  }
  return std::string(plural || more > 0 ? " in samples " : " in sample ") + and_list(named);
}

std::string count_text(const DatasetIdentity& a, const DatasetIdentity& b) {
  return std::to_string(a.samples) + " samples against " + std::to_string(b.samples);
}

}  // namespace

std::string dataset_difference(const DatasetIdentity& a, const DatasetIdentity& b,
                               const DatasetIndex* b_index) {
  if (a.legacy_only() || b.legacy_only()) {
    if (a.samples == b.samples && a.legacy == b.legacy) return "";
    std::string text = a.samples == b.samples ? "" : count_text(a, b) + "; ";
    return text + "the files' absolute paths or labels differ (digest " + a.legacy + " against " + b.legacy +
           ", of paths and labels, as forkfeed compared datasets before version-2 states)";
  }
  // What a state of version 2 did not hold is compared only when both have it.
  const bool content = a.sees_content() && b.sees_content();
  std::vector<std::string> said;
  if (a.samples != b.samples) said.push_back(count_text(a, b));
  // Fields renamed, reordered or read from other members: said as such, and the labels
  // (whose digest covers the fields' text) then go unsaid.
  const bool schema = content && a.fields != b.fields;
  if (schema) {
    said.push_back("fields differ ('" + printable_cut(a.fields, kNameBytes) + "' against '" +
                   printable_cut(b.fields, kNameBytes) + "')");
  }
  std::vector<std::string> differ;
  if (a.names != b.names) differ.emplace_back("names");
  if (a.labels != b.labels && !schema) differ.emplace_back("labels");
  if (a.sizes != b.sizes) differ.emplace_back("sizes");
  if (!differ.empty()) said.push_back(and_list(differ) + " differ" + where(a, b, b_index));
  if (content && a.content_check != b.content_check) {
    said.push_back("their contents were read by other checks (content_check " + a.content_check +
                   " against " + b.content_check + "): use one content_check for both");
  } else if (content && a.content != b.content && said.empty()) {  // what other sizes say already
    said.push_back("contents differ" + where(a, b, b_index, &DatasetIdentity::content_ranges) +
                   " (other bytes under the same names and sizes)");
  }
  std::string text;
  for (const std::string& s : said) text += (text.empty() ? "" : "; ") + s;
  return text;
}

}  // namespace forkfeed
