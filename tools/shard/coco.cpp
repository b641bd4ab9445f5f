// read_coco: a COCO instances file's records (tools/shard/coco_reader.h) checked, then a
// DatasetIndex and each sample's members: the boxes of its annotations, and their masks.
#include "tools/shard/coco.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "base/printable.h"
#include "dataset/dataset_index_builder.h"
#include "tools/shard/coco_mask.h"
#include "tools/shard/coco_reader.h"
#include "tools/shard/coco_text.h"
#include "workers/image_codecs.h"
#include "workers/image_decoder.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// How a message names an annotation: by its id, which a user searches the file for; by its
// place in "annotations" only where it has none.
std::string name_of(const CocoAnnotation& a) {
  if (a.id) return "annotation id " + std::to_string(*a.id);
  return "annotation #" + std::to_string(a.entry) + " (which has no integer id)";
}

// The file an image's file_name names, as one file_name of it would spell it: relative to
// `root` (the images' folder, normal) when under it, else the whole normal path. A name
// that is normal already ("000000000139.jpg", "a/b.jpg") is its own, without a path's cost.
std::string file_key(const std::string& root, const std::string& file_name) {
  const bool normal = !file_name.starts_with('/') && file_name.find("//") == std::string::npos &&
                      file_name.find("./") == std::string::npos && !file_name.ends_with("/.") &&
                      !file_name.ends_with("/..") && file_name != "." && file_name != "..";
  if (normal) return file_name;
  std::string path = (fs::path(root) / file_name).lexically_normal().string();
  const std::string folder = root.ends_with('/') ? root : root + '/';
  return path.starts_with(folder) ? path.substr(folder.size()) : path;
}

// One image's annotations, in the file's order, crowds dropped unless kept.
struct ImageTargets {
  std::int64_t id = 0;
  int width = 0, height = 0;
  std::vector<const CocoAnnotation*> annotations;
};

// What the Loader's boxes and per_box fields read.
std::string targets_json(const ImageTargets& t, const std::map<std::int64_t, std::int64_t>& labels) {
  json boxes = json::array(), classes = json::array(), crowd = json::array(), area = json::array();
  for (const CocoAnnotation* a : t.annotations) {
    boxes.push_back(a->bbox);
    classes.push_back(labels.at(*a->category_id));
    crowd.push_back(a->crowd ? 1 : 0);
    area.push_back(a->area);
  }
  return json{{"image_id", t.id}, {"boxes", boxes}, {"labels", classes}, {"iscrowd", crowd}, {"area", area}}
      .dump();
}

// The pixels of annotation `a` on its width x height image, as 1s in `out` (8-bit, zeroed):
// the union of its polygons, or its RLE.
Status rasterise(const CocoAnnotation& a, int width, int height, cv::Mat& out) {
  out.create(height, width, CV_8UC1);
  out.setTo(0);
  if (!a.rle) {
    // pycocotools' frPyObjects: a first list of 4 numbers makes every list a bbox [x, y, w, h].
    const bool bboxes = !a.polygons.empty() && a.polygons.front().size() == 4;
    for (const std::vector<double>& listed : a.polygons) {
      std::vector<double> polygon = listed;
      if (bboxes && listed.size() == 4) {
        const double x0 = listed[0], y0 = listed[1], x1 = x0 + listed[2], y1 = y0 + listed[3];
        polygon = {x0, y0, x0, y1, x1, y1, x1, y0};  // rleFrBbox's corners
      } else if (bboxes || listed.size() < 4) {
        return Status::BadData(
            "its segmentation lists " + std::to_string(listed.size()) +
            " numbers where pycocotools takes a polygon (6 or more) or, first, a bbox (4)");
      }
      // The boundary is traced point by point: a corner far off would trace (and hold)
      // millions of them, and past int's range its arithmetic is undefined.
      for (std::size_t i = 0; i < polygon.size(); ++i) {
        const double side = i % 2 == 0 ? width : height, v = polygon[i];
        if (!(v >= -side && v <= 2 * side)) {
          return Status::BadData("its polygon's " + std::string(i % 2 == 0 ? "x " : "y ") + number_text(v) +
                                 " lies far outside its " + std::to_string(width) + "x" +
                                 std::to_string(height) + " image (more than a side past an edge)");
        }
      }
      if (Status s = paint(rle_from_polygon(polygon, height, width), out, 1); !s.ok()) return s;
    }
    return Status::Ok();
  }
  if (a.size.size() != 2 || a.size[0] != height || a.size[1] != width) {
    return Status::BadData("its RLE's size is not its image's [" + std::to_string(height) + ", " +
                           std::to_string(width) + "]");
  }
  if (a.bad_count) {
    const double v = *a.bad_count;
    const std::string held = "its RLE counts hold " + number_text(v);
    if (v < 0) return Status::BadData(held + ", and a count of pixels is not negative");
    if (v != std::floor(v)) return Status::BadData(held + ", and a count of pixels is whole");
    return Status::BadData(held + ", more than the " + std::to_string(std::int64_t{width} * height) +
                           " pixels of its " + std::to_string(width) + "x" + std::to_string(height) +
                           " image (and than 2^32 - 1, the most pycocotools counts)");
  }
  if (a.compressed.empty()) return paint(a.counts, out, 1);
  auto counts = rle_from_string(a.compressed);
  if (!counts.ok()) return counts.status();
  return paint(*counts, out, 1);
}

// Whether the image file is the width x height its entry says.
Status check_size(ImageDecoders& decoders, const std::string& file, const ImageTargets& t) {
  const FileBytes bytes(reinterpret_cast<const std::byte*>(file.data()), file.size());
  auto choice = decoders.choose(bytes, std::uint64_t{1} << 40);
  if (!choice.ok()) return choice.status();
  ImageSize size = choice->size;
  if (size.width == 0) {  // its header does not say cheaply: decode it
    cv::Mat pixels;
    if (Status s = decoders.decode(bytes, std::uint64_t{1} << 40, pixels); !s.ok()) return s;
    size = {pixels.cols, pixels.rows};
  }
  if (size.width == t.width && size.height == t.height) return Status::Ok();
  return Status::BadData("the file is " + std::to_string(size.width) + "x" + std::to_string(size.height) +
                         ", its entry says " + std::to_string(t.width) + "x" + std::to_string(t.height) +
                         ": its boxes and masks would not fit it; fix the entry or the file");
}

// The image's mask member, as CocoOptions::Masks says.
Result<ShardMember> mask_member(const ImageTargets& t, const std::map<std::int64_t, std::int64_t>& labels,
                                CocoOptions::Masks kind) {
  const bool semantic = kind == CocoOptions::Masks::kSemantic;
  cv::Mat out(t.height, t.width, semantic ? CV_8UC1 : CV_16UC1, cv::Scalar(0));
  cv::Mat covered(t.height, t.width, CV_8UC1, cv::Scalar(0)), one;
  for (std::size_t k = 0; k < t.annotations.size(); ++k) {
    const CocoAnnotation& a = *t.annotations[k];
    if (Status s = rasterise(a, t.width, t.height, one); !s.ok()) {
      return Status::FromCode(s.code(), name_of(a) + ": " + s.message());
    }
    if (semantic) {
      const std::int64_t label = labels.at(*a.category_id);
      if (label < 1 || label > 254) {
        return Status::BadData(name_of(a) + " has label " + std::to_string(label) +
                               ", and a semantic mask holds labels 1 to 254 (0: none, 255: overlaps): use "
                               "--coco-labels contiguous, or --coco-masks instance");
      }
      out.setTo(static_cast<int>(label), one);
      cv::add(covered, one, covered);  // saturates at 255
    } else {
      if (k + 1 > 65535)
        return Status::BadData("holds more than 65535 annotations, what a 16-bit mask can number");
      out.setTo(static_cast<int>(k + 1), one);
    }
  }
  if (semantic) {
    cv::Mat overlaps;
    cv::compare(covered, 1, overlaps, cv::CMP_GT);
    out.setTo(255, overlaps);
  }
  std::vector<unsigned char> png;
  const Result<bool> encoded = image_codecs::encode(".png", out, png, {});
  if (!encoded.ok()) return encoded.status();
  if (!*encoded) return Status::Internal("OpenCV could not encode a mask as PNG");
  return ShardMember{semantic ? "seg.png" : "inst.png", std::string(png.begin(), png.end())};
}

}  // namespace

Result<CocoDataset> read_coco(const std::string& annotations, const CocoOptions& options) {
  const auto bad = [&](const std::string& what) {
    return Status::BadData("COCO annotations " + printable(annotations) + ": " + what);
  };
  auto file = MappedFile::open(annotations);
  if (!file.ok()) return file.status();
  auto read = read_coco_records(*file, options.masks != CocoOptions::Masks::kNone, options.max_held_bytes);
  if (!read.ok()) {
    return Status::FromCode(read.status().code(),
                            "COCO annotations " + printable(annotations) + ": " + read.status().message());
  }
  // Held by the members, which pack from it; the annotations' addresses stay.
  auto held = std::make_shared<CocoRecords>(std::move(read).value());
  const CocoRecords& records = *held;

  // The categories and their labels: the ids, or 1..K in sorted order.
  std::map<std::int64_t, std::int64_t> labels;
  for (const CocoCategory& c : records.categories) {
    if (!c.id) return bad("category #" + std::to_string(c.entry) + " has no integer id");
    labels[*c.id] = *c.id;
  }
  std::int64_t next = 1;
  for (auto& [id, label] : labels) label = options.contiguous_labels ? next++ : id;

  // The images by id, each once, each file once: its path as the index joins it, normal,
  // so that a file named twice ("a.jpg", "./a.jpg", "../train2017/a.jpg") is seen once.
  // Refused rather than packed once: the two entries are two ids, each with annotations
  // of its own, as pycocotools and torchvision's CocoDetection read them; and packed twice,
  // it would be two samples of one key, which a reader merges where they are neighbours.
  std::unordered_map<std::int64_t, std::size_t> by_id;
  std::unordered_map<std::string, std::size_t> by_file;
  const std::string root = fs::path(options.images).lexically_normal().string();
  for (const CocoImage& image : records.images) {
    const std::string entry = "image #" + std::to_string(image.entry);
    if (!image.id) return bad(entry + " has no integer id");
    if (image.file_name.empty())
      return bad(entry + " (id " + std::to_string(*image.id) + ") has no file_name");
    if (image.file_name.find('\0') != std::string::npos) return bad(entry + "'s file_name holds a NUL byte");
    if (auto [at, added] = by_id.emplace(*image.id, image.entry); !added) {
      return bad("images #" + std::to_string(at->second) + " and #" + std::to_string(image.entry) +
                 " both have id " + std::to_string(*image.id) + ": an image id names one image");
    }
    if (auto [at, added] = by_file.emplace(file_key(root, image.file_name), image.entry); !added) {
      const std::string& first = records.images[at->second].file_name;
      return bad("images #" + std::to_string(at->second) + " and #" + std::to_string(image.entry) +
                 " are both the file " + printable(first) +
                 (first == image.file_name ? std::string()
                                           : " (#" + std::to_string(image.entry) + " names it \"" +
                                                 printable(image.file_name) + "\")") +
                 ": one file is one sample");
    }
  }
  std::vector<ImageTargets> targets(records.images.size());
  for (const CocoImage& image : records.images) targets[image.entry].id = *image.id;
  for (const CocoAnnotation& a : records.annotations) {
    const std::string entry = name_of(a);
    if (!a.image_id || !by_id.contains(*a.image_id)) {
      return bad(entry + (a.image_id
                              ? " is of image_id " + std::to_string(*a.image_id) + ", which no image has"
                              : " has no integer image_id"));
    }
    if (!a.category_id || !labels.contains(*a.category_id)) {
      return bad(entry + (a.category_id ? " is of category_id " + std::to_string(*a.category_id) +
                                              ", which no category has"
                                        : " has no integer category_id"));
    }
    // What the JSON holds where COCO has another kind, a segmentation's only with masks.
    if (!a.misread.empty()) return bad(entry + ": " + a.misread);
    if (a.bbox_numbers != 4) {
      return bad(entry + ": its bbox holds " + std::to_string(a.bbox_numbers) +
                 " numbers; COCO's is [x, y, w, h]");
    }
    if (a.crowd && !options.keep_crowd) continue;
    targets[by_id.at(*a.image_id)].annotations.push_back(&a);
  }

  // Samples in the order of their ids, as torchvision's CocoDetection takes them.
  std::vector<std::size_t> order(records.images.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return *records.images[a].id < *records.images[b].id; });
  std::erase_if(order, [&](std::size_t i) { return !options.keep_empty && targets[i].annotations.empty(); });

  auto packed = std::make_shared<std::vector<ImageTargets>>();
  DatasetIndexBuilder builder;
  for (std::size_t i : order) {
    const CocoImage& image = records.images[i];
    const auto side = [](const std::optional<std::int64_t>& v) { return v && *v >= 1 && *v <= 65535; };
    if (side(image.width) && side(image.height)) {
      targets[i].width = static_cast<int>(*image.width);
      targets[i].height = static_cast<int>(*image.height);
    } else if (options.masks != CocoOptions::Masks::kNone) {
      return bad("image #" + std::to_string(image.entry) + " (id " + std::to_string(*image.id) +
                 ") has no width and height of 1 to 65535, which its masks are drawn at");
    }
    builder.add(options.images, image.file_name, 0, DatasetIndex::kUnknownBytes);
    packed->push_back(std::move(targets[i]));
  }
  builder.set_root(options.images);
  // The members of each sample, made as it is packed, from what the reader holds.
  const std::string name = printable(annotations);
  auto decoders = std::make_shared<ImageDecoders>();
  SampleMembers members = [held, packed, labels, name, decoders, masks = options.masks](
                              const PackedSample& sample,
                              std::string image) -> Result<std::vector<ShardMember>> {
    const ImageTargets& t = (*packed)[sample.index];
    // Boxes and masks are in the pixels of the size the file gives: the image must have it.
    if (t.width > 0) {
      if (Status s = check_size(*decoders, image, t); !s.ok()) {
        return Status::FromCode(s.code(), "COCO annotations " + name + ": image id " + std::to_string(t.id) +
                                              " (" + printable(sample.path) + "): " + s.message());
      }
    }
    std::vector<ShardMember> out;
    out.push_back({std::string(sample.extension), std::move(image)});
    out.push_back({"json", targets_json(t, labels)});
    if (masks != CocoOptions::Masks::kNone) {
      auto mask = mask_member(t, labels, masks);
      if (!mask.ok()) {
        return Status::FromCode(mask.status().code(), "COCO annotations " + name + ": image id " +
                                                          std::to_string(t.id) + ": " +
                                                          mask.status().message());
      }
      out.push_back(std::move(mask).value());
    }
    return out;
  };
  return CocoDataset{std::move(builder).finish(), std::move(members)};
}

}  // namespace forkfeed
