// ContentCache: the content digests (formats/content_digest.h) of a dataset of a file per
// sample (an ImageFolder, a manifest) as its last open read them, each with the file's
// stamp (device, inode, size, modification and status-change times: base/file_stamp.h),
// so that opening it again reads no file unchanged since — a stat each, as listing the
// sizes always cost. One file of a CacheFolder per dataset and content check; a file
// that does not answer (absent, torn, of another dataset) is a miss for every file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/cache_folder.h"
#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

class ContentCache {
 public:
  // What is kept of one file: 56 bytes.
  struct Entry {
    std::uint64_t path = 0;  // path_digest() of its path as the index holds it
    FileStamp stamp;
    std::uint64_t content = 0;  // 0: not read (never a hit)
    bool operator==(const Entry&) const = default;
  };
  static std::uint64_t path_digest(std::string_view path);

  // The cache of the dataset named `dataset` (its root or manifest, absolute) read as
  // `check`, in `folder`.
  ContentCache(const CacheFolder& folder, std::string_view dataset, ContentCheck check);

  // The entries stored last, in the index's order then; empty when none answers.
  std::vector<Entry> load() const;
  // Stores `entries` (CacheFolder::write's Status).
  Status store(std::span<const Entry> entries) const;

 private:
  const CacheFolder& folder_;
  std::string name_;
  ContentCheck check_;
};

}  // namespace forkfeed
