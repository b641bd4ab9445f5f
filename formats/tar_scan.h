// Finding the regular-file members of a tar shard by one pass over its headers: the
// data is skipped by offset, so a 1 GB shard costs at most one pread per header (one per
// dozens where members are small: the headers are read ahead). Asked for the members'
// content digests, the scan reads their windows (formats/content_digest.h) in the same
// reads: a small member lies in the window read ahead, a large one's last bytes are read
// with the next header, its first ones with its own.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/options.h"
#include "forkfeed/status.h"
#include "formats/tar_member.h"

namespace forkfeed {

// Calls `member` with each regular file of the tar archive open at `fd` (`file_size`
// bytes), in archive order, and stops at the first non-ok Status it returns, which
// scan_tar() returns unchanged. `shard` is the archive's name in messages.
//
// Reads ustar (name and prefix), v7, GNU (long names 'L', long links 'K', base-256 sizes)
// and pax ('x': `path` and `size` override the next header; 'g': checked and otherwise
// ignored, since a global `path` names no member). Regular files are typeflags '0',
// '\0' and '7'; directories, links, devices, FIFOs and unknown types are skipped.
// Names are reported as stored ("./a.jpg" stays so).
//
// End of archive: a zero block, whether another zero block or the end of the file
// follows it (GNU tar reads a lone zero block as the end too, with a warning); the end of
// the file at a header boundary is accepted as GNU tar and Python's tarfile accept it.
//
// Errors are BadData naming `shard` and, where known, the member: an empty file, a file
// that is not tar (bad checksum at offset 0), a corrupt header later on, a truncated
// header or member, a size that is not a number, a malformed pax record. IoError when a
// read fails. With `content`, each member's TarMember::content is its digest, read as that
// check says.
Status scan_tar(int fd, std::string_view shard, std::uint64_t file_size,
                const std::function<Status(TarMember&&)>& member,
                std::optional<ContentCheck> content = std::nullopt);

// The name of the member whose `name_headers` bytes of headers (TarMember::name_headers:
// its own header block, or from the GNU long name or pax header that gave its name) are
// `headers`, read from the archive `shard` just before the member's data. The one reader of
// a member's name from its headers, for the samples' keys and for messages. BadData naming
// `shard` when they are not the headers of one regular member whose data follows them.
Result<std::string> member_name_in(std::span<const std::byte> headers, std::string_view shard);

// Every regular-file member of the tar file at `path` (opened by open_regular_file(), so
// a FIFO or a directory is refused with InvalidArgument).
Result<std::vector<TarMember>> scan_tar_file(const std::string& path);

}  // namespace forkfeed
