// forkfeed-shard: packs an ImageFolder tree or a manifest into WebDataset tar shards,
// the input of LoaderOptions::shards and forkfeed-bench --shards.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "base/printable.h"
#include "tools/cli/exit_status.h"
#include "tools/cli/integer_flag.h"
#include "tools/shard/convert.h"

namespace {

constexpr const char* kDescription =
    "Packs an image dataset into WebDataset tar shards.\n\n"
    "A shard is a plain tar file holding a run of samples; reading a few large files in\n"
    "sequence is much faster than opening millions of small ones, on network storage above\n"
    "all. Each sample is two consecutive members with the same key:\n"
    "  class_000/img_00000.jpg   the image file's bytes (its extension lower-cased)\n"
    "  class_000/img_00000.cls   its label, as decimal text (\"3\")\n"
    "The key is the image's path relative to the ImageFolder root (or the manifest's folder;\n"
    "an absolute or ../ path loses its leading '/' and ..), without its extension, and with\n"
    "any '.' in the file name made '_' (WebDataset ends a key at the first '.' of the name).\n"
    "Samples go in the order a Loader indexes --from, --shard-size to a shard; the last\n"
    "shard may hold fewer. The same input writes the same bytes again. A shard that exists\n"
    "is kept, not rewritten (shards appear only once complete), so an interrupted run is\n"
    "resumed by running it again; --force rewrites them all (kept shards are not compared\n"
    "with --from: after changing the dataset, use --force). The folders of --out are\n"
    "created. Read the shards back with the --shards spec printed at the end, labels from\n"
    "the .cls members (--shard-label cls) or from the key's folder (--shard-label\n"
    "class_folder, the ImageFolder's labels when images sit directly in their class\n"
    "folders); in Python, webdataset.WebDataset(spec) gives the same samples.\n\n"
    "A manifest is 'path<TAB>label' lines, or a table of several fields a sample: a header\n"
    "line of tab-separated column names, then a line per sample, a cell per column. The first\n"
    "column is the image path; each other column becomes the member <key>.<column>, in\n"
    "column order: cls the label; a column named like an image or an array (seg.png,\n"
    "depth.png, npy, emb.npy) the bytes of the file its cell names (relative to the\n"
    "manifest's folder); any other (txt, json, ...) the cell's text itself. An empty cell\n"
    "leaves that member out of its sample. Column names are lower-cased.\n\n"
    "A COCO instances file (--from annotations/instances_train2017.json --coco-images\n"
    "train2017) packs each image, in the order of their ids, with a .json member of its\n"
    "annotations: {\"image_id\": 139, \"boxes\": [[x, y, w, h], ...], \"labels\": [...],\n"
    "\"iscrowd\": [...], \"area\": [...]} (COCO's bbox, in pixels). Read them with the fields\n"
    "\"image=jpg, boxes=json:boxes(key=boxes, format=xywh), labels=json:per_box(key=labels)\".\n"
    "With --coco-masks, each image's segmentations too, rasterised as pycocotools does: a\n"
    "<key>.seg.png of labels (semantic) or a 16-bit <key>.inst.png of box numbers (instance),\n"
    "read with \"seg=seg.png:mask(fill=255)\" or \"inst=inst.png:mask(dtype=uint16)\". The file\n"
    "is read as a stream: what is held is the images' names, the boxes and (with masks) the\n"
    "segmentations, and an image or category an annotation names must exist, each image id\n"
    "and file once.\n";

constexpr const char* kExample =
    "Example:\n"
    "  forkfeed-shard --from /data/imagenet/train --out /data/shards/train-%06d.tar --shard-size 1000\n"
    "  forkfeed-bench --shards '/data/shards/train-{000000..001281}.tar' --workers 8\n"
    "A table (tabs between cells), packed into a/x.jpg a/x.cls a/x.txt a/x.seg.png a/x.json:\n"
    "  image    cls  txt                seg.png     json\n"
    "  a/x.jpg  3    a dog on a beach   a/x_m.png   {\"score\": 0.5}\n"
    "COCO:\n"
    "  forkfeed-shard --from coco/annotations/instances_train2017.json --coco-images coco/train2017 \\\n"
    "      --out /data/coco/train-%04d.tar --coco-labels contiguous\n\n"
    "Exit status: 0 done, 1 bad data or a file that could not be read or written,\n"
    "2 bad arguments (nothing was written).";

}  // namespace

int main(int argc, char** argv) {
  forkfeed::ShardConversion conversion;
  CLI::App app(kDescription, "forkfeed-shard");
  app.footer(kExample);
  app.get_formatter()->column_width(30);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "forkfeed-shard: " + std::string(e.what()) + " (see --help)\n";
  });
  app.add_option("--from", conversion.from,
                 "An ImageFolder root (one subfolder per class) or a manifest file")
      ->required()
      ->type_name("DIR|MANIFEST");
  app.add_option("--out", conversion.out,
                 "Path of the shards with one %d or %0Nd for the shard number, e.g. /data/train-%06d.tar")
      ->required()
      ->type_name("PATTERN");
  app.add_option("--shard-size", conversion.shard_size, "Samples per shard")
      ->type_name("N")
      ->capture_default_str()
      ->check(forkfeed::cli::integer_of(conversion.shard_size))
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}));
  app.add_flag("--force", conversion.force, "Rewrite shards that exist instead of keeping them");
  app.add_option("--coco-images", conversion.coco.images,
                 "--from is a COCO instances file and this the folder of its images")
      ->type_name("DIR");
  std::string labels = "ids", crowd = "drop", empty = "keep";
  app.add_option("--coco-labels", labels,
                 "COCO labels: the category ids (1..90 with gaps, torchvision's detection models' "
                 "num_classes=91) or contiguous 1..K in the order of the ids")
      ->check(CLI::IsMember({"ids", "contiguous"}))
      ->capture_default_str();
  app.add_option("--coco-crowd", crowd,
                 "iscrowd=1 annotations: dropped, as torchvision's detection reference trains, or kept")
      ->check(CLI::IsMember({"drop", "keep"}))
      ->capture_default_str();
  app.add_option("--coco-empty", empty,
                 "COCO images without an annotation (after --coco-crowd): kept or dropped")
      ->check(CLI::IsMember({"keep", "drop"}))
      ->capture_default_str();
  std::string masks = "none";
  app.add_option(
         "--coco-masks", masks,
         "COCO segmentations (polygons, RLE) rasterised as pycocotools does: none; semantic, a "
         "<key>.seg.png of each pixel's label (0 none, 255 where annotations overlap); or instance, a "
         "16-bit <key>.inst.png of each pixel's box number (from 1, the last annotation wins)")
      ->check(CLI::IsMember({"none", "semantic", "instance"}))
      ->capture_default_str();
  std::uint64_t held_mib = conversion.coco.max_held_bytes >> 20;
  app.add_option("--coco-max-mib", held_mib,
                 "The most memory reading a COCO file may take beside its mapped text: the names, boxes and "
                 "segmentations kept, and what the JSON parser holds (a long string, used or not); a larger "
                 "file is refused")
      ->type_name("MIB")
      ->capture_default_str()
      ->check(forkfeed::cli::integer_of(held_mib))
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 30));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return forkfeed::cli::parse_exit(app, e);
  }
  conversion.coco.contiguous_labels = labels == "contiguous";
  conversion.coco.keep_crowd = crowd == "keep";
  conversion.coco.keep_empty = empty == "keep";
  conversion.coco.max_held_bytes = held_mib << 20;
  conversion.coco.masks = masks == "semantic"   ? forkfeed::CocoOptions::Masks::kSemantic
                          : masks == "instance" ? forkfeed::CocoOptions::Masks::kInstance
                                                : forkfeed::CocoOptions::Masks::kNone;

  // A carriage-return progress line is noise in a log file, so only on a terminal.
  const bool show_progress = isatty(STDERR_FILENO) == 1;
  auto progress = [](std::uint64_t done, std::uint64_t total) {
    std::fprintf(stderr, "\rpacking samples: %llu/%llu", static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total));
    std::fflush(stderr);
  };
  const auto start = std::chrono::steady_clock::now();
  const forkfeed::Result<forkfeed::ShardConversionReport> report =
      show_progress ? forkfeed::convert_to_shards(conversion, progress)
                    : forkfeed::convert_to_shards(conversion);
  if (show_progress) std::fputs("\r\033[K", stderr);  // clear the progress line
  if (!report.ok()) {
    std::fprintf(stderr, "forkfeed-shard: %s\n", forkfeed::printable(report.status().message()).c_str());
    return report.status().code() == forkfeed::Status::Code::kInvalidArgument
               ? forkfeed::cli::kExitBadArguments
               : forkfeed::cli::kExitFailed;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "wrote %llu sample%s in %llu shard%s (%llu kept) to %s (%.1f MB) in %.1f s; read them with --shards "
      "'%s'\n",
      static_cast<unsigned long long>(report->samples), report->samples == 1 ? "" : "s",
      static_cast<unsigned long long>(report->shards), report->shards == 1 ? "" : "s",
      static_cast<unsigned long long>(report->kept), report->folder.c_str(),
      static_cast<double>(report->bytes) / 1e6, seconds, report->spec.c_str());
  return forkfeed::cli::kExitOk;
}
