// Files a user names (a manifest, a state, a config, an image) may be anything: a FIFO
// whose open() waits for a writer, /dev/zero that never ends, a directory, a device.
// These are the one place that makes sure such a path is a regular file of bounded size
// before it is read, and that a file is replaced only when it is a regular file.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/unique_fd.h"
#include "forkfeed/status.h"

namespace forkfeed {

// A bound on the bytes read, named in the refusal: "<what> <path> is N bytes > <name>
// <bytes>: <remedy>".
struct SizeLimit {
  std::uint64_t bytes;
  std::string_view name;    // "max_file_bytes", "the limit"
  std::string_view remedy;  // what to do; may be empty
};

struct RegularFile {
  UniqueFd fd;
  std::uint64_t size = 0;  // at open
  mode_t mode = 0;         // its permission bits (st_mode & 07777), at open
  uid_t owner = 0;         // its owner's uid, at open
};

// Ok unless `path` holds a NUL byte, which the system would take for its end and so name
// another file: InvalidArgument "<what> <path> holds a NUL byte at position N; ...".
// Every path a user gives goes through this before it reaches a system call.
Status check_no_nul(std::string_view what, std::string_view path);

// Opens `path` read-only without blocking (O_NONBLOCK: a FIFO does not wait for a
// writer) and refuses anything but a regular file, or one over `limit`, with
// InvalidArgument. Messages start with "<what> <path>", e.g. "manifest /data/x.tsv is a
// FIFO, not a regular file: ...". `what` is the role of the file ("--resume file"); an
// empty one makes them start with "the file", for callers that name the file themselves.
// A path with a NUL byte is refused (check_no_nul).
Result<RegularFile> open_regular_file(const std::string& path, std::string_view what, const SizeLimit& limit);

// The whole of `path`, checked as open_regular_file() does; a file that grows past
// `limit` while it is read is refused too, so memory stays bounded.
Result<std::string> read_regular_file(const std::string& path, std::string_view what, const SizeLimit& limit);
// The rest of `file`, opened by open_regular_file(path, what, limit), bounded the same way:
// for a caller that checks what it opened (its mode, say) before reading it.
Result<std::string> read_opened_file(RegularFile& file, const std::string& path, std::string_view what,
                                     const SizeLimit& limit);

// Ok iff `path` does not exist or is a regular file (not a symbolic link), and its folder
// is writable: what AtomicFile (base/atomic_file.h) needs, checked before long work.
Status check_replaceable(const std::string& path, std::string_view what);

}  // namespace forkfeed
