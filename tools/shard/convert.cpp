// convert_to_shards: a DatasetIndex in, WebDataset tar shards out, through TarWriter.
#include "tools/shard/convert.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

#include "base/printable.h"
#include "base/regular_file.h"
#include "dataset/dataset_index_builder.h"
#include "dataset/image_extensions.h"
#include "dataset/manifest_table.h"
#include "forkfeed/dataset.h"
#include "formats/label_text.h"
#include "tools/shard/coco.h"
#include "tools/shard/shard_pattern.h"
#include "tools/shard/tar_writer.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;

// An image is read whole into memory to be written; a larger file is surely not one.
constexpr SizeLimit kImageLimit{std::uint64_t{256} << 20, "the limit of",
                                "forkfeed-shard packs image files, not archives or videos"};
// A file a manifest's column names (a mask, an array) is read whole too.
constexpr SizeLimit kMemberLimit{std::uint64_t{256} << 20, "the limit of",
                                 "forkfeed-shard packs a sample's files, not archives or videos"};
// As DatasetIndex::from_manifest bounds a manifest: tens of millions of lines.
constexpr SizeLimit kManifestLimit{std::uint64_t{4} << 30, "the manifest limit of",
                                   "split the dataset, or check that this is a manifest"};

std::string normal_absolute(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

// The path of sample `path` that its key is made from: relative to `base` when it is
// under it, else (an absolute or "../" manifest path) the whole normal path without its
// leading '/', so that no member name climbs out of the folder tar extracts into.
std::string relative_to(std::string_view path, const std::string& base) {
  std::string normal = fs::path(path).lexically_normal().string();
  const std::string folder = base.ends_with('/') ? base : base + '/';
  if (normal.starts_with(folder)) return normal.substr(folder.size());
  while (normal.starts_with('/')) normal.erase(0, 1);
  return normal;
}

Status check_shard_size(std::uint64_t shard_size) {
  if (shard_size >= 1) return Status::Ok();
  return Status::InvalidArgument("--shard-size must be at least 1 sample per shard");
}

// Whether shard `path` is there to keep: a regular file. Anything else there (a
// folder, a link) is left for TarWriter::create to refuse.
bool complete_shard_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::span<const std::byte> bytes_of(std::string_view text) {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

// The members of a sample without ShardConversion::members: its image, its label.
Result<std::vector<ShardMember>> image_and_label(const PackedSample& sample, std::string image) {
  std::vector<ShardMember> members;
  members.push_back({std::string(sample.extension), std::move(image)});
  members.push_back({"cls", std::to_string(sample.label)});
  return members;
}

// What a reader needs of a sample's members: names that keep the key and that tell the
// members apart. A members function that breaks this is a bug of its caller's.
Status check_members(const PackedSample& sample, const std::vector<ShardMember>& members) {
  for (std::size_t m = 0; m < members.size(); ++m) {
    const std::string& extension = members[m].extension;
    const bool twice = std::any_of(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(m),
                                   [&](const ShardMember& other) { return other.extension == extension; });
    if (extension.empty() || extension.find('/') != std::string::npos || twice) {
      return Status::Internal("the members of sample " + printable(sample.path) + " include " +
                              quoted_start(extension, 40) + (twice ? " twice" : ", which is no extension") +
                              "; every member needs its own");
    }
  }
  return Status::Ok();
}

// Whether the cells of column `name` are paths of files, whose bytes the member holds:
// an image's or an array's, as a field's kind is taken from its extension; any other
// column's cells are the members' bytes themselves (a caption, a label, a JSON record).
bool is_file_column(std::string_view name) {
  std::string dotted = ".";  // appended, not "." + ...: GCC 12 warns of a false -Wrestrict there
  dotted += name;
  return has_image_extension(dotted) || dotted.ends_with(".npy");
}

// `path` as a manifest in `folder` names it: relative paths are relative to the folder.
std::string under(const std::string& folder, const std::string& path) {
  return path.starts_with('/') ? path : folder + "/" + path;
}

// A manifest with a header line, as a dataset: the index of its first column's images,
// with labels from its cls column (0 without one), and the members of each of its rows.
struct TableDataset {
  DatasetIndex index;
  SampleMembers members;
};

Result<TableDataset> table_dataset(std::string_view text, const std::string& manifest) {
  Result<ManifestTable> read = read_manifest_table(text, manifest);
  if (!read.ok()) return read.status();
  auto table = std::make_shared<const ManifestTable>(std::move(read).value());
  // "a.jpg" alone on a first line is a column name too, but surely an image without its label.
  if (has_image_extension(table->columns[0])) {
    return Status::BadData(
        printable(manifest) + ": the header line's first column is named " + table->columns[0] +
        ", an image's name: is it an image path without its label? A manifest without a "
        "header line has 'path<TAB>label' lines; a table's first column is named like 'image'");
  }
  const std::string folder = fs::path(manifest).parent_path().string();
  const auto cls = std::find(table->columns.begin(), table->columns.end(), "cls");
  const std::size_t label_column = static_cast<std::size_t>(cls - table->columns.begin());

  DatasetIndexBuilder builder;
  for (const ManifestTable::Row& row : table->rows) {
    auto bad = [&](const std::string& what) {
      return Status::BadData(printable(manifest) + ":" + std::to_string(row.line) + ": " + what);
    };
    const std::string& image = row.cells[0];
    if (image.empty() || image.find('\0') != std::string::npos) {
      return bad("the first column, " + table->columns[0] + ", holds the sample's image path; got " +
                 quoted_start(image, 100));
    }
    std::int64_t label = 0;
    if (label_column < table->columns.size() && !row.cells[label_column].empty()) {
      const std::optional<std::int64_t> parsed = parse_label(row.cells[label_column]);
      if (!parsed) {
        return bad("cls must be " + std::string(kLabelRule) + ", got " +
                   quoted_start(row.cells[label_column], 40));
      }
      label = *parsed;
    }
    builder.add(folder, image, label, DatasetIndex::kUnknownBytes);
  }
  builder.set_root(folder);

  // Row i is sample i: an index keeps a manifest's order.
  SampleMembers members = [table, folder, manifest, label_column](
                              const PackedSample& sample,
                              std::string image) -> Result<std::vector<ShardMember>> {
    const ManifestTable::Row& row = table->rows[sample.index];
    std::vector<ShardMember> out;
    out.push_back({std::string(sample.extension), std::move(image)});
    for (std::size_t c = 1; c < table->columns.size(); ++c) {
      const std::string& name = table->columns[c];
      const std::string& cell = row.cells[c];
      if (cell.empty()) continue;  // the sample lacks this member
      if (name == sample.extension) {
        return Status::BadData(printable(manifest) + ":" + std::to_string(row.line) + ": the column " + name +
                               " and the image " + printable(row.cells[0]) + " would both be the member ." +
                               name + "; name the column otherwise");
      }
      if (c == label_column) {
        out.push_back({name, std::to_string(sample.label)});
      } else if (is_file_column(name)) {
        Result<std::string> bytes =
            read_regular_file(under(folder, cell), "the " + name + " file", kMemberLimit);
        if (!bytes.ok()) {
          return Status::FromCode(
              bytes.status().code(),
              printable(manifest) + ":" + std::to_string(row.line) + ": " + bytes.status().message());
        }
        out.push_back({name, std::move(bytes).value()});
      } else {
        out.push_back({name, cell});
      }
    }
    return out;
  };
  return TableDataset{std::move(builder).finish(), std::move(members)};
}

}  // namespace

Result<SampleName> sample_name(std::string_view relative) {
  const std::size_t slash = relative.rfind('/');
  const std::size_t file_start = slash == std::string_view::npos ? 0 : slash + 1;
  const std::string_view file = relative.substr(file_start);
  const std::size_t dot = file.rfind('.');
  if (dot == std::string_view::npos || !has_image_extension(file)) {
    return Status::InvalidArgument(printable(relative) + " has no image extension (" +
                                   std::string(kImageExtensionList) +
                                   "): a reader finds a sample's image by its extension");
  }
  if (dot == 0) return Status::InvalidArgument(printable(relative) + " has no name before its extension");
  SampleName name;
  name.key.assign(relative.substr(0, file_start));
  for (const char c : file.substr(0, dot)) name.key += c == '.' ? '_' : c;
  for (const char c : file.substr(dot + 1))
    name.extension += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return name;
}

Result<ShardConversionReport> convert_to_shards(
    const ShardConversion& conversion,
    const std::function<void(std::uint64_t done, std::uint64_t total)>& progress) {
  Result<ShardPattern> pattern = ShardPattern::parse(conversion.out);
  if (!pattern.ok()) return pattern.status();
  if (Status s = check_shard_size(conversion.shard_size); !s.ok()) return s;

  // The paths a Loader would index: absolute and normal, so keys are relative to the same root.
  const std::string from = normal_absolute(conversion.from);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(from, ec)) && !fs::exists(from, ec)) {
    return Status::InvalidArgument("--from " + printable(conversion.from) +
                                   " does not exist; give an ImageFolder root (a folder) or a manifest file");
  }
  const bool folder = fs::is_directory(from, ec);
  SampleMembers members_of = conversion.members ? conversion.members : image_and_label;
  Result<DatasetIndex> index = Status::Internal("not indexed");
  std::string base = folder ? from : fs::path(from).parent_path().string();
  if (!conversion.coco.images.empty()) {
    CocoOptions coco = conversion.coco;
    coco.images = normal_absolute(coco.images);
    if (!fs::is_directory(coco.images, ec)) {
      return Status::InvalidArgument(
          "--coco-images " + printable(conversion.coco.images) +
          " is not a folder; give the folder of the COCO file's images (train2017/)");
    }
    Result<CocoDataset> dataset = read_coco(from, coco);
    if (!dataset.ok()) return dataset.status();
    index = std::move(dataset->index);
    members_of = std::move(dataset->members);
    base = coco.images;
  } else if (folder) {
    index = DatasetIndex::from_image_folder(from);
  } else {
    Result<std::string> text = read_regular_file(from, "manifest", kManifestLimit);
    if (!text.ok()) return text.status();
    if (has_header_line(*text)) {
      Result<TableDataset> table = table_dataset(*text, from);
      if (!table.ok()) return table.status();
      index = std::move(table->index);
      if (!conversion.members) members_of = std::move(table->members);
    } else {
      index = DatasetIndex::from_manifest(from);
    }
  }
  if (!index.ok()) return index.status();

  const std::uint64_t samples = index->size();
  const std::uint64_t shards = (samples + conversion.shard_size - 1) / conversion.shard_size;
  if (Status s = pattern->check_count(shards); !s.ok()) return s;

  // Every name first, so that a dataset that cannot be packed leaves no shard behind.
  std::vector<SampleName> names;
  names.reserve(samples);
  for (std::uint64_t i = 0; i < samples; ++i) {
    Result<SampleName> name = sample_name(relative_to(index->path(i), base));
    if (!name.ok()) return Status::BadData(std::string(index->path(i)) + ": " + name.status().message());
    if (i > 0 && names.back().key == name->key) {
      return Status::BadData("samples " + printable(index->path(i - 1)) + " and " +
                             printable(index->path(i)) + " both get the key " + printable(name->key) +
                             ", and a reader would merge them into one sample; rename one of them");
    }
    names.push_back(std::move(name).value());
  }

  ShardConversionReport report;
  report.samples = samples;
  report.shards = shards;
  report.folder = pattern->folder();
  report.spec = shards == 0 ? std::string() : pattern->brace_spec(shards);
  for (std::uint64_t shard = 0; shard < shards; ++shard) {
    const std::string path = pattern->path(shard);
    const std::uint64_t first = shard * conversion.shard_size;
    const std::uint64_t end = std::min(samples, first + conversion.shard_size);
    if (!conversion.force && complete_shard_exists(path)) {
      ++report.kept;
      report.bytes += fs::file_size(path, ec);
      if (progress) progress(end, samples);
      continue;
    }
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec)
      return Status::IoError("cannot create the folder of shard " + printable(path) + ": " + ec.message());
    Result<TarWriter> writer = TarWriter::create(path);
    // Its InvalidArgument (something not a file in the way) is about the disk, not the flags.
    if (!writer.ok()) return Status::IoError(writer.status().message());
    for (std::uint64_t i = first; i < end; ++i) {
      Result<std::string> image = read_regular_file(std::string(index->path(i)), "image", kImageLimit);
      if (!image.ok()) return image.status();
      const SampleName& name = names[i];
      const PackedSample sample{i, index->path(i), name.extension, index->label(i)};
      Result<std::vector<ShardMember>> members = members_of(sample, std::move(image).value());
      if (!members.ok()) return members.status();
      if (Status s = check_members(sample, *members); !s.ok()) return s;
      for (const ShardMember& member : *members) {
        if (Status s = writer->add(name.key + "." + member.extension, bytes_of(member.bytes)); !s.ok())
          return s;
      }
      if (progress && (i + 1) % 64 == 0) progress(i + 1, samples);
    }
    if (Status s = writer->finish(); !s.ok()) return s;
    report.bytes += fs::file_size(path, ec);
    if (progress) progress(end, samples);
  }
  return report;
}

}  // namespace forkfeed
