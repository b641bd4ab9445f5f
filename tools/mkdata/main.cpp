// forkfeed-mkdata: writes a deterministic synthetic ImageFolder dataset, or WebDataset
// shards of one, so the demo, the benchmark and the tests never need to download images.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/number_text.h"
#include "base/printable.h"
#include "tools/cli/exit_status.h"
#include "tools/cli/integer_flag.h"
#include "tools/mkdata/sample_fields.h"
#include "tools/mkdata/synthetic_images.h"
#include "tools/shard/convert.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kDescription =
    "Writes a synthetic image-classification dataset in torchvision ImageFolder layout\n"
    "(DIR/class_000/img_00000.jpg, ...) for trying and benchmarking forkfeed without\n"
    "downloading data. To a codec the images look like photographs: smooth gradients,\n"
    "blended shapes, texture, noise and a light blur, mostly as baseline JPEG (quality\n"
    "75-95), with 3 in 20 grayscale JPEG, progressive JPEG or PNG. The shorter side is drawn\n"
    "from [--min-side, --max-side], the aspect ratio from 3:4 to 4:3. The same options\n"
    "write the same bytes again (with the same OpenCV build), so a dataset can be rebuilt\n"
    "instead of copied. Files of the same name in DIR are overwritten, others left alone.\n\n"
    "--format wds writes the same images as WebDataset tar shards instead (what\n"
    "forkfeed-shard makes of an ImageFolder): DIR/shard-000000.tar, ... with --shard-size\n"
    "samples each, every sample a class_NNN/img_NNNNN.<ext> image and its .cls label. The\n"
    "images are drawn into DIR/.forkfeed-mkdata-images first, removed at the end.\n\n"
    "--fields (with --format wds) writes samples of several members, for multi-field\n"
    "loaders (fields=): each one listed, in the order listed, e.g. --fields\n"
    "jpg,txt,cls,json,npy,seg.png:\n"
    "  jpg        the image (.png for the PNG one in --special-every; 0 makes all .jpg)\n"
    "  txt        a UTF-8 caption of 1 to 12 words, one in 8 of 40 to 79 (some not ASCII)\n"
    "  cls        the label, the class number in decimal\n"
    "  json       {\"label\": C, \"score\": 0.xxxx, \"caption_id\": N}\n"
    "  npy        a float32 array of shape (8,): N + k/8 for k = 0..7\n"
    "  seg.png    a grey PNG mask of the image's size: a 4x4 grid of blocks\n"
    "  depth.png  a grey PNG of the image's size: a diagonal ramp\n"
    "  boxes.json {\"boxes\": [[x, y, w, h], ...], \"labels\": [...]}: seg.png's 16 blocks and classes\n"
    "Every value is a function of --seed and N, the image's number (key class_CCC/img_NNNNN),\n"
    "given in tools/mkdata/sample_fields.h, so a test can compute what a loader reads.\n";

constexpr const char* kExample =
    "Example:\n"
    "  forkfeed-mkdata --out /tmp/imgs --images 2000 --classes 20 --seed 7\n"
    "writes 100 images into each of /tmp/imgs/class_000 ... /tmp/imgs/class_019.\n"
    "  forkfeed-mkdata --out /tmp/shards --images 2000 --classes 20 --format wds --shard-size 500\n"
    "writes /tmp/shards/shard-000000.tar ... shard-000003.tar, read with\n"
    "  forkfeed-bench --shards '/tmp/shards/shard-{000000..000003}.tar'\n"
    "  forkfeed-mkdata --out /tmp/clip --images 200 --format wds --fields jpg,txt,cls,json,npy\n"
    "writes image-caption samples, read with fields={\"image\": \"jpg;png\", \"caption\": \"txt\", ...}\n\n"
    "Exit status: 0 done, 1 a file could not be written, 2 bad arguments.";

// The scratch ImageFolder of --format wds, inside the output folder so that it is on
// the same disk, hidden so that a directory spec (--shards DIR) never sees it.
constexpr const char* kScratchFolder = ".forkfeed-mkdata-images";

// Total size of the regular files under `root`; 0 if it cannot be listed (the summary
// line is informative only).
std::uintmax_t tree_bytes(const fs::path& root) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const std::uintmax_t size = it->file_size(size_ec);
      if (!size_ec) total += size;
    }
  }
  return total;
}

// The image's number in a path of write_synthetic_dataset's: ".../img_00042.jpg" -> 42.
std::optional<std::uint32_t> image_number(std::string_view path) {
  const std::size_t start = path.rfind("/img_");
  const std::size_t dot = path.rfind('.');
  if (start == std::string_view::npos || dot == std::string_view::npos || dot < start) return std::nullopt;
  const std::optional<std::uint64_t> n =
      forkfeed::parse_whole_number(path.substr(start + 5, dot - start - 5), UINT32_MAX);
  if (!n) return std::nullopt;
  return static_cast<std::uint32_t>(*n);
}

// The members of each sample for --fields, in the order listed.
forkfeed::SampleMembers sample_members(const forkfeed::SyntheticDatasetSpec& spec,
                                       const std::vector<std::string>& members) {
  return [spec, members](const forkfeed::PackedSample& sample,
                         std::string image) -> forkfeed::Result<std::vector<forkfeed::ShardMember>> {
    const std::optional<std::uint32_t> n = image_number(sample.path);
    if (!n) return forkfeed::Status::Internal("no image number in " + forkfeed::printable(sample.path));
    std::vector<forkfeed::ShardMember> out;
    for (const std::string& member : members) {
      if (member == "jpg") {
        out.push_back({std::string(sample.extension), std::move(image)});
        continue;
      }
      forkfeed::Result<std::string> bytes = forkfeed::mkdata::field_member(spec, *n, member);
      if (!bytes.ok()) return bytes.status();
      out.push_back({member, std::move(bytes).value()});
    }
    return out;
  };
}

}  // namespace

int main(int argc, char** argv) {
  forkfeed::SyntheticDatasetSpec spec;
  CLI::App app(kDescription, "forkfeed-mkdata");
  app.footer(kExample);
  app.add_option("--out", spec.out, "Root folder of the dataset; created if missing")
      ->required()
      ->type_name("DIR");
  app.add_option("--images", spec.images, "Number of images in total, spread evenly over the classes")
      ->capture_default_str()
      ->check(forkfeed::cli::integer_of(spec.images));
  app.add_option("--classes", spec.classes, "Number of class folders")
      ->capture_default_str()
      ->check(forkfeed::cli::integer_of(spec.classes));
  app.add_option("--seed", spec.seed, "Seed; the same seed and options give the same files")
      ->capture_default_str()
      ->check(forkfeed::cli::integer_of(spec.seed));
  app.add_option("--min-side", spec.min_side, "Smallest shorter side, in pixels")
      ->capture_default_str()
      ->check(forkfeed::cli::integer_of(spec.min_side));
  app.add_option("--max-side", spec.max_side, "Largest shorter side, in pixels")
      ->capture_default_str()
      ->check(forkfeed::cli::integer_of(spec.max_side));
  app.add_option("--special-every", spec.special_every,
                 "One image in N is a grayscale JPEG, one a progressive JPEG, one a PNG; 0: all baseline "
                 "colour JPEGs, like a folder of photographs")
      ->type_name("N")
      ->capture_default_str()
      ->check(forkfeed::cli::integer_of(spec.special_every));
  std::string format = "folder";
  std::uint64_t shard_size = 1000;
  app.add_option("--format", format,
                 "folder: an ImageFolder tree; wds: WebDataset tar shards DIR/shard-NNNNNN.tar")
      ->capture_default_str()
      ->check(CLI::IsMember({"folder", "wds"}));
  auto* shard_size_option = app.add_option("--shard-size", shard_size, "With --format wds: samples per shard")
                                ->type_name("N")
                                ->capture_default_str()
                                ->check(forkfeed::cli::integer_of(shard_size))
                                ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}));
  std::string fields = "jpg,cls";
  auto* fields_option =
      app.add_option(
             "--fields", fields,
             "With --format wds: the members of each sample, in order, of jpg txt cls json npy seg.png "
             "depth.png boxes.json (see above)")
          ->type_name("LIST")
          ->capture_default_str();
  std::vector<std::string> members;
  try {
    app.parse(argc, argv);
    if (shard_size_option->count() > 0 && format != "wds") {
      throw CLI::ValidationError("--shard-size", "only with --format wds");
    }
    if (fields_option->count() > 0 && format != "wds")
      throw CLI::ValidationError("--fields", "only with --format wds");
    forkfeed::Result<std::vector<std::string>> parsed = forkfeed::mkdata::parse_member_list(fields);
    if (!parsed.ok()) throw CLI::ValidationError(parsed.status().message());
    members = std::move(parsed).value();
  } catch (const CLI::ParseError& e) {
    return forkfeed::cli::parse_exit(app, e);
  }
  const bool shards = format == "wds";
  const fs::path out = spec.out;
  if (shards) spec.out = (out / kScratchFolder).string();

  // A carriage-return progress line is noise in a log file, so only on a terminal.
  const bool show_progress = isatty(STDERR_FILENO) == 1;
  auto progress = [&](std::uint32_t done) {
    if (done % 10 == 0 || done == spec.images) {
      std::fprintf(stderr, "\rwriting images: %u/%u", done, spec.images);
      std::fflush(stderr);
    }
  };

  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  // What a crashed run left in the scratch folder would become samples.
  if (shards) fs::remove_all(spec.out, ec);
  const forkfeed::Status status = show_progress ? forkfeed::write_synthetic_dataset(spec, progress)
                                                : forkfeed::write_synthetic_dataset(spec);
  if (show_progress) std::fputs("\r\033[K", stderr);  // clear the progress line
  if (!status.ok()) {
    if (shards) fs::remove_all(spec.out, ec);
    std::fprintf(stderr, "forkfeed-mkdata: %s\n", forkfeed::printable(status.message()).c_str());
    return forkfeed::cli::kExitFailed;
  }
  if (shards) {
    // Like the images of the folder format, shards of the same name are overwritten.
    forkfeed::ShardConversion conversion;
    conversion.from = spec.out;
    conversion.out = (out / "shard-%06d.tar").string();
    conversion.shard_size = shard_size;
    conversion.force = true;
    if (fields_option->count() > 0) conversion.members = sample_members(spec, members);
    const forkfeed::Result<forkfeed::ShardConversionReport> report = forkfeed::convert_to_shards(conversion);
    fs::remove_all(spec.out, ec);
    if (!report.ok()) {
      std::fprintf(stderr, "forkfeed-mkdata: %s\n", forkfeed::printable(report.status().message()).c_str());
      return forkfeed::cli::kExitFailed;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string with = fields_option->count() > 0 ? " (members " + fields + ")" : "";
    std::printf(
        "wrote %u image%s%s in %u class%s as %llu shard%s to %s (%.1f MB) in %.1f s; read them with --shards "
        "'%s'\n",
        spec.images, spec.images == 1 ? "" : "s", with.c_str(), spec.classes, spec.classes == 1 ? "" : "es",
        static_cast<unsigned long long>(report->shards), report->shards == 1 ? "" : "s", out.c_str(),
        static_cast<double>(report->bytes) / 1e6, seconds, report->spec.c_str());
    return 0;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double megabytes = static_cast<double>(tree_bytes(spec.out)) / 1e6;
  std::printf("wrote %u image%s in %u class%s to %s (%.1f MB) in %.1f s\n", spec.images,
              spec.images == 1 ? "" : "s", spec.classes, spec.classes == 1 ? "" : "es", spec.out.c_str(),
              megabytes, seconds);
  return 0;
}
