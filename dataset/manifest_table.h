// A manifest of named columns: a header line of tab-separated column names, then one
// sample a line, a cell per column. The plain manifest ("path<TAB>label", manifest.cpp)
// has no header: every line of it ends in a label, and a header line ends in a name.
// Samples with several fields (an image, its caption, a mask, an array) are such tables.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/status.h"

namespace forkfeed {

// The longest line of a manifest, plain or with a header: no path is this long (PATH_MAX
// is 4096), so a longer line is a binary file passed by mistake.
inline constexpr std::size_t kMaxManifestLineBytes = 65536;

struct ManifestTable {
  struct Row {
    std::size_t line = 0;            // in the file, from 1, for messages
    std::vector<std::string> cells;  // one per column; "" for an empty cell
  };
  // Lower-cased, each once: [a-z0-9_-] and inner dots ("seg.png"), as WebDataset spells
  // the extensions of a sample's members.
  std::vector<std::string> columns;
  std::vector<Row> rows;
};

// What to do with a table: a Loader reads its fields from shards, where a sample's
// members lie together and one index entry finds them all.
inline constexpr std::string_view kPackTableHint =
    "pack the table into WebDataset shards with forkfeed-shard --from MANIFEST --out 'DIR/shard-%06d.tar' "
    "(each column becomes a member of its sample), then read them with shards and fields";

// Whether the manifest `text` starts with a header line: its first line that is not blank
// or a '#' comment ends in a cell that is no label (dataset/label.h).
bool has_header_line(std::string_view text);

// Reads the manifest `text` (the contents of the file `manifest`, named in messages) as a
// table. Blank lines and lines starting with '#' are skipped, a BOM and a line's '\r'
// dropped, as in a plain manifest. BadData naming the file and line for: a header cell
// that is no column name, a name twice, a row of another number of cells than the header,
// a line over 64 KiB (a binary file passed by mistake), no rows at all.
Result<ManifestTable> read_manifest_table(std::string_view text, std::string_view manifest);

}  // namespace forkfeed
