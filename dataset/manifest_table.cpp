// read_manifest_table: a manifest's header line and rows, split at tabs, with every
// refusal naming the file, the line and what to write instead.
#include "dataset/manifest_table.h"

#include <algorithm>

#include "base/printable.h"
#include "formats/label_text.h"

namespace forkfeed {
namespace {

// Calls `line(number, text)` for each line of `text` that is not blank or a comment, a
// BOM and '\r' dropped; stops at the first error it returns.
template <typename F>
Status for_each_line(std::string_view text, F&& line) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // BOM from Windows editors
  std::size_t number = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view current = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++number;
    if (current.ends_with('\r')) current.remove_suffix(1);
    if (current.find_first_not_of(" \t") == std::string_view::npos || current.starts_with('#')) continue;
    if (Status s = line(number, current); !s.ok()) return s;
  }
  return Status::Ok();
}

std::vector<std::string_view> cells_of(std::string_view line) {
  std::vector<std::string_view> cells;
  for (;;) {
    const std::size_t tab = line.find('\t');
    cells.push_back(line.substr(0, tab));
    if (tab == std::string_view::npos) return cells;
    line.remove_prefix(tab + 1);
  }
}

// A column name: what may follow a key's first '.' in a member's name.
bool is_column_name(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '.' ||
      name.find("..") != std::string_view::npos) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

std::string lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return out;
}

}  // namespace

bool has_header_line(std::string_view text) {
  bool header = false;
  // The first line decides; the error stops the walk there.
  (void)for_each_line(text, [&](std::size_t, std::string_view line) {
    header = !parse_label(line.substr(line.rfind('\t') == std::string_view::npos ? 0 : line.rfind('\t') + 1));
    return Status::Cancelled("");
  });
  return header;
}

Result<ManifestTable> read_manifest_table(std::string_view text, std::string_view manifest) {
  ManifestTable table;
  bool header = true;
  const Status read = for_each_line(text, [&](std::size_t number, std::string_view line) {
    auto bad = [&](const std::string& what) {
      return Status::BadData(printable(manifest) + ":" + std::to_string(number) + ": " + what);
    };
    if (line.size() > kMaxManifestLineBytes) {
      return bad("line is over " + std::to_string(kMaxManifestLineBytes) + " bytes; is this a manifest?");
    }
    const std::vector<std::string_view> cells = cells_of(line);
    if (header) {
      header = false;
      for (const std::string_view cell : cells) {
        if (!is_column_name(cell)) {
          // A plain manifest's line with a bad label lands here too: say why it is a header.
          return bad(
              "a header line naming the columns, since its last cell " + quoted_start(cells.back(), 40) +
              " is no label; but " + quoted_start(cell, 60) +
              " is no column name (letters, digits, '_', '-' and inner '.', as a member's extension is "
              "spelled). A manifest without a header line has 'path<TAB>label' lines");
        }
        std::string name = lowered(cell);
        if (std::find(table.columns.begin(), table.columns.end(), name) != table.columns.end()) {
          return bad("the header line names the column " + name + " twice");
        }
        table.columns.push_back(std::move(name));
      }
      return Status::Ok();
    }
    if (cells.size() != table.columns.size()) {
      return bad(std::to_string(cells.size()) + " cells, but the header line names " +
                 std::to_string(table.columns.size()) + " columns: " + quoted_start(line, 100) +
                 " (cells are separated by one tab; an empty cell is two tabs in a row)");
    }
    table.rows.push_back({number, std::vector<std::string>(cells.begin(), cells.end())});
    return Status::Ok();
  });
  if (!read.ok()) return read;
  if (table.rows.empty()) {
    return Status::BadData(printable(manifest) + ": no samples" +
                           (header ? ": the manifest is empty" : " under its header line"));
  }
  return table;
}

}  // namespace forkfeed
