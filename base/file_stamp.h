// FileStamp of a file: taken when a shard is indexed, compared whenever a worker reads
// it, so that samples are never read from a shard that changed since (another file under
// its name, or the same file rewritten or touched): the index's offsets and labels
// describe only the file it was made from.
#pragma once

#include <sys/stat.h>

#include <string>

#include "forkfeed/dataset.h"
#include "forkfeed/status.h"

namespace forkfeed {

FileStamp stamp_of(const struct stat& st);
// fstat() of an open file.
Result<FileStamp> stamp_file(int fd);
// What differs, for a message: "it is another file now (device 8:1, inode 12; was inode
// 34)", "its size is 900 bytes (was 1000)", "it was modified", "its status changed (a
// copy over it, a touch, a chmod)". REQUIRES: indexed != now.
std::string stamp_change(const FileStamp& indexed, const FileStamp& now);

}  // namespace forkfeed
