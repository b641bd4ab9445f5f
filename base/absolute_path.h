// absolute_path(): a path a user gave, made independent of the working directory
// without changing which file it names. Only what means the same to the kernel in any
// case is removed by text ("." components, repeated and trailing '/'); ".." is left for
// the kernel to resolve: after a symbolic link, "link/../x" is not "x".
#pragma once

#include <string>

namespace forkfeed {

// `path` taken from this process's working directory. A path with ".." components has
// the part up to the last of them resolved by realpath(), as the kernel would follow it
// (symbolic links in that part are resolved too); the rest, and a path without "..",
// keeps the user's names. When that part cannot be resolved (it does not exist), the
// path is kept with its ".." for open() to report. Empty stays empty.
std::string absolute_path(const std::string& path);

}  // namespace forkfeed
