// mark_files(): what a dataset of a file per sample (an ImageFolder, a manifest) knows of
// each file's bytes — its size and its content digest (formats/content_digest.h) — read
// while indexing, on a few threads: each file opened once, fstat'ed, its windows read; or,
// where the content cache holds the file with its stamp unchanged, a stat.
#pragma once

#include <cstdint>

#include "dataset/content_cache.h"
#include "dataset/dataset_index_builder.h"
#include "forkfeed/options.h"

namespace forkfeed {

// Marks every file added to `builder`, through `cache` (null: none), which it then
// updates; the number whose content could not be read, which a warning also says. A file
// that cannot be opened (absent, a broken link, no permission, failing) keeps its size
// where stat() still gives one (else DatasetIndex::kUnknownBytes) and content 0, "not
// read"; one that is not a regular file (a FIFO, a directory) its size and content 0: it
// is bad data when a worker reads it (on_error decides), not an error here. Threads are
// joined before it returns.
std::uint64_t mark_files(DatasetIndexBuilder& builder, ContentCheck check, const ContentCache* cache);

}  // namespace forkfeed
