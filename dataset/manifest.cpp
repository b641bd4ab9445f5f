// DatasetIndex::from_manifest: parses a "path<TAB>label" file, one sample a line, and
// names the file and line of anything it cannot use.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/printable.h"
#include "base/regular_file.h"
#include "dataset/dataset_index_builder.h"
#include "dataset/file_marks.h"
#include "dataset/manifest_table.h"
#include "forkfeed/dataset.h"
#include "formats/label_text.h"

namespace forkfeed {
namespace {

// A 1.28M-line manifest is ~60 MB; 4 GiB is tens of millions of samples, more than one
// loader indexes. The bound keeps a wrong file from filling memory.
constexpr SizeLimit kManifestLimit{std::uint64_t{4} << 30, "the manifest limit of",
                                   "split the dataset, or check that this is a manifest"};

// A manifest line quoted for an error: tabs made visible (the usual mistake is spaces
// where the tab should be), every control byte escaped, and cut short, in case a binary
// file was passed by mistake.
std::string quote(std::string_view line) { return quoted_start(line, 100); }

}  // namespace

Result<DatasetIndex> DatasetIndex::from_manifest(const std::string& manifest, ContentCheck check,
                                                 const std::string& cache_dir) {
  Result<std::string> read = read_regular_file(manifest, "manifest", kManifestLimit);
  if (!read.ok()) return read.status();
  std::string_view text = read.value();
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // BOM from Windows editors

  // Relative paths are relative to the manifest's folder ("" when it is in the cwd).
  std::string_view folder = manifest;
  const std::size_t slash = folder.rfind('/');
  folder = slash == std::string_view::npos ? std::string_view() : folder.substr(0, slash == 0 ? 1 : slash);

  DatasetIndexBuilder builder;
  const std::size_t max_lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  builder.reserve(max_lines, text.size() + max_lines * (folder.size() + 1));

  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (line.size() > kMaxManifestLineBytes) {
      return Status::BadData(printable(manifest) + ":" + std::to_string(line_no) + ": line is over " +
                             std::to_string(kMaxManifestLineBytes) +
                             " bytes; is this a manifest of 'path<TAB>label' lines?");
    }
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos || line.starts_with('#')) continue;

    auto bad = [&](std::string what) {
      return Status::BadData(printable(manifest) + ":" + std::to_string(line_no) + ": " + what);
    };
    // The last tab separates the label, so a path may itself contain tabs.
    const std::size_t tab = line.rfind('\t');
    if (tab == std::string_view::npos || tab == 0)
      return bad("expected 'path<TAB>label', got " + quote(line));
    const std::optional<std::int64_t> label = parse_label(line.substr(tab + 1));
    if (!label && builder.size() == 0) {  // the first line: a table's header of column names?
      return bad(quote(line) + " ends in no label, as a table's header line of named columns does; " +
                 std::string(kPackTableHint) + ". A manifest of 'path<TAB>label' lines has " +
                 std::string(kLabelRule) + " label on every line");
    }
    if (!label) {
      return bad("label must be " + std::string(kLabelRule) + ", got " + quote(line.substr(tab + 1)) +
                 " in " + quote(line));
    }
    // open() would stop at the NUL and read another file than the line names.
    if (line.substr(0, tab).find('\0') != std::string_view::npos)
      return bad("a path cannot hold a NUL byte, got " + quote(line));
    builder.add(folder, line.substr(0, tab), *label, DatasetIndex::kUnknownBytes);
  }
  builder.set_root(std::string(folder));
  if (builder.size() == 0) {
    return Status::BadData(printable(manifest) +
                           ": no samples; expected one 'path<TAB>label' per line "
                           "(blank lines and lines starting with '#' are skipped)");
  }
  // Each file's size and content, for the identity.
  const CacheFolder cache_folder(cache_dir, "the files' content cache");
  const ContentCache cache(cache_folder, manifest, check);
  mark_files(builder, check, cache_dir.empty() ? nullptr : &cache);
  return std::move(builder).finish();
}

}  // namespace forkfeed
