// One regular-file member of a tar archive, as the scan (formats/tar_scan.h) finds it.
#pragma once

#include <cstdint>
#include <string>

#include "formats/tar_format.h"

namespace forkfeed {

// One regular-file member of a tar archive: its full name (long names and pax paths
// resolved) and where its bytes lie in the archive.
struct TarMember {
  std::string name;
  std::uint64_t offset = 0;  // of the member's first data byte, from the start of the file
  std::uint64_t size = 0;    // data bytes
  // The bytes before its data that its name is read from (member_name_in): its own header
  // block when that holds the whole name; from the GNU long name or pax header before it
  // when that gave the name.
  std::uint64_t name_headers = tar::kBlock;
  // Its content digest (formats/content_digest.h), when the scan was asked for it; else 0.
  std::uint64_t content = 0;
  bool operator==(const TarMember&) const = default;
};

}  // namespace forkfeed
