// A dataset's identity: what its samples are — each one's name relative to the dataset's
// root, its label, its size and its bytes as its content check sees them — never where the
// dataset is mounted. Equal identities mean the same samples in the same order (invariant
// 4) at any path. This header is the one place that computes identities and compares
// them: a resumed state (loader/checkpoint.cpp), the daemons of a fan-in at connect and at
// every rejoin (client/remote/fan_in_open.cpp).
//
// What it does not see: with content_check=windows, an edit in place in the middle of a
// file or member over 16 KiB that keeps its size (formats/content_digest.h says which bytes
// are read); with content_check=full, nothing the digests do not (XXH3 and FNV-1a catch
// mistakes, not an adversary).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "forkfeed/dataset.h"

namespace forkfeed {

// The length of a digest, in lowercase hex digits.
inline constexpr std::size_t kDigestDigits = 16;
// A range's digest, in lowercase hex digits: it only says where two identities differ.
inline constexpr std::size_t kRangeDigits = 8;
// The most ranges an identity is cut into: 64 of 8 digits, half a KiB in a state.
inline constexpr std::uint64_t kMaxRanges = 64;

struct DatasetIdentity {
  std::uint64_t samples = 0;
  // FNV-1a 64 digests, in index order, of every sample's name (DatasetIndex::name(); for a
  // shard's member, its shard's name and its offset in it), label and size (a file's, or
  // a member's; the shards' sizes too). With fields, `labels` covers their text (so
  // another schema is another dataset) and each sample's other labels and numbers, and
  // `sizes` each sample's other members' sizes (a caption rewritten at another length).
  std::string names;
  std::string labels;
  std::string sizes;
  // Where two identities differ: the samples cut into ranges of `range_samples` (the
  // least power of two that makes at most kMaxRanges of them), one kRangeDigits digest
  // of each range's names, labels and sizes, back to back.
  std::uint64_t range_samples = 1;
  std::string ranges;
  // What the samples' bytes are, as the index's content check read them
  // (DatasetIndex::contents()): its name ("windows", "full"), a digest of every file's
  // or shard's content digest in index order, and by range as `ranges` are (a shard in
  // the range of its first sample). The fields' text (fields_text(); "" without fields),
  // to say how two schemas differ. The content ones are empty in an identity read from a
  // state of version 2, which had none, and where a file could not be read while indexing
  // (DatasetIndex::contents()): it is then compared by names, labels and sizes.
  std::string content_check;
  std::string content;
  std::string content_ranges;
  std::string fields;
  // What a state of version 1 holds instead: the digest of absolute paths and labels
  // (before identities existed), kept so that such a state still resumes where nothing
  // moved. An identity read from a version-1 state holds only `samples` and `legacy`.
  std::string legacy;

  bool legacy_only() const { return names.empty(); }
  bool sees_content() const { return !content.empty(); }
  std::uint64_t range_count() const { return ranges.size() / kRangeDigits; }
  // How many ranges `samples` make: their digests' length over kRangeDigits.
  std::uint64_t ranges_for_samples() const {
    return samples / range_samples + (samples % range_samples != 0);
  }
  // Every field equal; whether two identities are one dataset is dataset_difference()'s.
  bool operator==(const DatasetIdentity&) const = default;
};

// The identity of `index`: one pass over its names, about as long as hashing its paths
// (the content digests were made while indexing).
DatasetIdentity dataset_identity(const DatasetIndex& index);

// The range_samples of a dataset of `samples` samples.
std::uint64_t identity_range_samples(std::uint64_t samples);

// Empty when `a` and `b` are one dataset; else what differs and where, for the middle of
// a sentence: "96 samples against 97; names and sizes differ in samples 64-95 (cls/a.jpg
// .. cls/z.jpg)". Sample names come from `b_index`, the index `b` was made of, when given.
// Against a version-1 identity only `samples` and `legacy` are compared.
std::string dataset_difference(const DatasetIdentity& a, const DatasetIdentity& b,
                               const DatasetIndex* b_index = nullptr);

}  // namespace forkfeed
