// read_coco: a COCO instances file streamed through nlohmann's SAX parser into the images
// and the boxes of their annotations, checked, then a DatasetIndex and each sample's members.
#include "tools/shard/coco.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "base/printable.h"
#include "base/regular_file.h"
#include "dataset/dataset_index_builder.h"
#include "tools/shard/coco_mask.h"
#include "workers/image_codecs.h"
#include "workers/image_decoder.h"

namespace forkfeed {
namespace {

using json = nlohmann::json;

// A read-only mapping of a whole file: its pages are the page cache's, not the process's.
class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path) {
    auto file = open_regular_file(path, "COCO annotations", {std::uint64_t{1} << 40, "the limit of", ""});
    if (!file.ok()) return file.status();
    MappedFile m;
    m.size_ = file->size;
    if (m.size_ == 0) return m;
    void* at = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, file->fd.get(), 0);
    if (at == MAP_FAILED) return Status::FromErrno("mmap of COCO annotations " + printable(path), errno);
    m.data_ = static_cast<const char*>(at);
    ::madvise(at, m.size_, MADV_SEQUENTIAL);
    return m;
  }
  MappedFile(MappedFile&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MappedFile& operator=(MappedFile&&) = delete;
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
  }
  std::string_view text() const { return {data_, size_}; }

 private:
  MappedFile() = default;
  const char* data_ = nullptr;
  std::uint64_t size_ = 0;
};

struct Image {
  std::optional<std::int64_t> id{};
  std::string file_name{};
  std::optional<std::int64_t> width{}, height{};
  std::size_t entry = 0;  // its place in "images", from 0, for messages
};

struct Annotation {
  std::optional<std::int64_t> image_id{}, category_id{};
  std::array<double, 4> bbox{};
  std::size_t bbox_numbers = 0;  // how many the bbox held: 4, or it is refused
  bool crowd = false;
  double area = 0;
  std::size_t entry = 0;
  // Its segmentation, when masks are packed: polygons, or an RLE (counts or a string) of size.
  std::vector<std::vector<double>> polygons{};
  RunLengths counts{};
  std::string compressed{};
  std::vector<std::int64_t> size{};
  bool rle = false;
  bool bad_counts = false;  // a count that is not a whole number of pixels
};

struct Category {
  std::optional<std::int64_t> id{};
  std::size_t entry = 0;
};

// The SAX events of the file, kept where they say something of an image, an annotation or
// a category: the top object's "images", "annotations" and "categories" lists, the fields
// of their entries; everything deeper (segmentations) passes.
class CocoReader : public nlohmann::json_sax<json> {
 public:
  CocoReader(std::uint64_t max_held_bytes, bool segmentations)
      : max_held_(max_held_bytes), segmentations_(segmentations) {}

  std::vector<Image> images;
  std::vector<Annotation> annotations;
  std::vector<Category> categories;
  bool saw_images = false;
  Status error;  // why parsing stopped, when a handler stopped it

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v), v); }
  bool number_unsigned(number_unsigned_t v) override {
    const bool fits = v <= static_cast<number_unsigned_t>(std::numeric_limits<std::int64_t>::max());
    return number(static_cast<double>(v), fits ? std::optional<std::int64_t>(v) : std::nullopt);
  }
  bool number_float(number_float_t v, const string_t&) override { return number(v, std::nullopt); }
  bool string(string_t& s) override {
    if (depth_ == 3 && in_entry() && section_ == Section::kImages && field_ == "file_name") {
      images.back().file_name = s;
      return hold(s.size());
    }
    if (in_segmentation(4, false) && inner_field_ == "counts") {
      annotations.back().compressed = s;
      return hold(s.size());
    }
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open(false);
    if (in_segmentation(4, false)) annotations.back().rle = true;
    if (depth_ == 3 && in_entry()) {
      switch (section_) {
        case Section::kImages: images.push_back({.entry = images.size()}); return hold(sizeof(Image));
        case Section::kAnnotations:
          annotations.push_back({.entry = annotations.size()});
          return hold(sizeof(Annotation));
        case Section::kCategories: categories.push_back({.entry = categories.size()}); return true;
        case Section::kOther: break;
      }
    }
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) {
      section_ = k == "images"        ? Section::kImages
                 : k == "annotations" ? Section::kAnnotations
                 : k == "categories"  ? Section::kCategories
                                      : Section::kOther;
      // Python's json (and so pycocotools) keeps the last of a key given twice; a reader
      // here would see both: refused rather than either.
      if (section_ != Section::kOther && !sections_seen_.insert(k).second) {
        error = Status::BadData("has the key \"" + k + "\" twice: keep one list");
        return false;
      }
    } else if (depth_ == 3) {
      field_ = k;
    } else if (depth_ == 4) {
      inner_field_ = k;
    }
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    open(true);
    if (depth_ == 2 && section_ == Section::kImages) saw_images = true;
    if (in_segmentation(5, true) && !arrays_[3]) return true;                  // an RLE's counts or size
    if (in_segmentation(5, true)) annotations.back().polygons.emplace_back();  // a polygon
    return true;
  }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    if (error.ok()) error = Status::BadData("not JSON at byte " + std::to_string(position) + ": " + e.what());
    return false;
  }

 private:
  enum class Section { kOther, kImages, kAnnotations, kCategories };

  // An entry's object: depth 3, in a list at depth 2 of a section.
  bool in_entry() const { return arrays_.size() >= 3 && arrays_[1] && !arrays_[2]; }
  // At `depth` inside an annotation's "segmentation", in a list (or an object) there.
  bool in_segmentation(int depth, bool array) const {
    return segmentations_ && depth_ == depth && section_ == Section::kAnnotations &&
           field_ == "segmentation" && arrays_.size() >= 3 && arrays_[1] && !arrays_[2] &&
           arrays_.back() == array;
  }
  void open(bool array) {
    ++depth_;
    arrays_.push_back(array);
  }
  bool close() {
    --depth_;
    arrays_.pop_back();
    return true;
  }
  bool number(double v, std::optional<std::int64_t> integer) {
    if (in_segmentation(5, true)) {
      Annotation& a = annotations.back();
      if (!arrays_[3]) {  // {"counts": [...], "size": [h, w]}
        if (inner_field_ == "counts") {
          const bool count =
              integer && *integer >= 0 && *integer <= std::numeric_limits<std::uint32_t>::max();
          a.bad_counts = a.bad_counts || !count;
          a.counts.push_back(count ? static_cast<std::uint32_t>(*integer) : 0);
        }
        if (inner_field_ == "size") a.size.push_back(integer.value_or(-1));
        return hold(sizeof(std::uint32_t));
      }
      a.polygons.back().push_back(v);  // [[x1, y1, x2, y2, ...], ...]
      return hold(sizeof(double));
    }
    if (depth_ == 4 && arrays_.size() == 4 && arrays_[3] && section_ == Section::kAnnotations &&
        field_ == "bbox") {
      Annotation& a = annotations.back();
      if (a.bbox_numbers < 4) a.bbox[a.bbox_numbers] = v;
      ++a.bbox_numbers;
      return true;
    }
    if (depth_ != 3 || !in_entry()) return true;
    switch (section_) {
      case Section::kImages:
        if (field_ == "id") images.back().id = integer;
        if (field_ == "width") images.back().width = integer;
        if (field_ == "height") images.back().height = integer;
        break;
      case Section::kAnnotations:
        if (field_ == "image_id") annotations.back().image_id = integer;
        if (field_ == "category_id") annotations.back().category_id = integer;
        if (field_ == "iscrowd") annotations.back().crowd = v != 0;
        if (field_ == "area") annotations.back().area = v;
        break;
      case Section::kCategories:
        if (field_ == "id") categories.back().id = integer;
        break;
      case Section::kOther: break;
    }
    return true;
  }
  // Counts `bytes` more held; false (stopping the parse) past the bound.
  bool hold(std::uint64_t bytes) {
    held_ += bytes;
    if (held_ <= max_held_) return true;
    error = Status::ResourceExhausted(
        "more images and annotations than " + std::to_string(max_held_ >> 20) +
        " MiB of memory hold (at image " + std::to_string(images.size()) + ", annotation " +
        std::to_string(annotations.size()) +
        "): raise --coco-max-mib, or split it into files of fewer images, each packed into shards");
    return false;
  }

  std::uint64_t max_held_;
  bool segmentations_;
  std::uint64_t held_ = 0;
  int depth_ = 0;
  std::vector<bool> arrays_;  // per open container, whether it is a list
  Section section_ = Section::kOther;
  std::string field_;
  std::string inner_field_;  // a key of an object in an entry (an RLE's)
  std::set<std::string> sections_seen_;
};

// One image's annotations, in the file's order, crowds dropped unless kept.
struct ImageTargets {
  std::int64_t id = 0;
  int width = 0, height = 0;
  std::vector<const Annotation*> annotations;
};

// What the Loader's boxes and per_box fields read.
std::string targets_json(const ImageTargets& t, const std::map<std::int64_t, std::int64_t>& labels) {
  json boxes = json::array(), classes = json::array(), crowd = json::array(), area = json::array();
  for (const Annotation* a : t.annotations) {
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
Status rasterise(const Annotation& a, int width, int height, cv::Mat& out) {
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
          char text[32];
          std::snprintf(text, sizeof text, "%g", v);
          return Status::BadData("its polygon's " + std::string(i % 2 == 0 ? "x " : "y ") + text +
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
  if (a.bad_counts)
    return Status::BadData("its RLE counts hold one that is no count of pixels (negative, or a fraction)");
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
    const Annotation& a = *t.annotations[k];
    if (Status s = rasterise(a, t.width, t.height, one); !s.ok()) {
      return Status::FromCode(s.code(), "annotation #" + std::to_string(a.entry) + ": " + s.message());
    }
    if (semantic) {
      const std::int64_t label = labels.at(*a.category_id);
      if (label < 1 || label > 254) {
        return Status::BadData("annotation #" + std::to_string(a.entry) + " has label " +
                               std::to_string(label) +
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
  auto file = MappedFile::open(annotations);
  if (!file.ok()) return file.status();
  const auto bad = [&](const std::string& what) {
    return Status::BadData("COCO annotations " + printable(annotations) + ": " + what);
  };
  auto held =
      std::make_shared<CocoReader>(options.max_held_bytes, options.masks != CocoOptions::Masks::kNone);
  CocoReader& reader = *held;
  const std::string_view text = file->text();
  const bool parsed = json::sax_parse(text.begin(), text.end(), &reader);
  if (!reader.error.ok()) {
    return Status::FromCode(reader.error.code(),
                            "COCO annotations " + printable(annotations) + ": " + reader.error.message());
  }
  if (!parsed || !reader.saw_images) {
    return bad("no \"images\" list: is it an instances_*.json (annotations/ of a COCO download)?");
  }

  // The categories and their labels: the ids, or 1..K in sorted order.
  std::map<std::int64_t, std::int64_t> labels;
  for (const Category& c : reader.categories) {
    if (!c.id) return bad("category #" + std::to_string(c.entry) + " has no integer id");
    labels[*c.id] = *c.id;
  }
  std::int64_t next = 1;
  for (auto& [id, label] : labels) label = options.contiguous_labels ? next++ : id;

  // The images by id, each once, each file once.
  std::unordered_map<std::int64_t, std::size_t> by_id;
  std::unordered_map<std::string_view, std::size_t> by_file;
  for (const Image& image : reader.images) {
    const std::string entry = "image #" + std::to_string(image.entry);
    if (!image.id) return bad(entry + " has no integer id");
    if (image.file_name.empty())
      return bad(entry + " (id " + std::to_string(*image.id) + ") has no file_name");
    if (image.file_name.find('\0') != std::string::npos) return bad(entry + "'s file_name holds a NUL byte");
    if (auto [at, added] = by_id.emplace(*image.id, image.entry); !added) {
      return bad("images #" + std::to_string(at->second) + " and #" + std::to_string(image.entry) +
                 " both have id " + std::to_string(*image.id) + ": an image id names one image");
    }
    if (auto [at, added] = by_file.emplace(image.file_name, image.entry); !added) {
      return bad("images #" + std::to_string(at->second) + " and #" + std::to_string(image.entry) +
                 " are both the file " + printable(image.file_name) + ": one file is one sample");
    }
  }
  std::vector<ImageTargets> targets(reader.images.size());
  for (const Image& image : reader.images) targets[image.entry].id = *image.id;
  for (const Annotation& a : reader.annotations) {
    const std::string entry = "annotation #" + std::to_string(a.entry);
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
    if (a.bbox_numbers != 4) {
      return bad(entry + "'s bbox holds " + std::to_string(a.bbox_numbers) +
                 " numbers; COCO's is [x, y, w, h]");
    }
    if (a.crowd && !options.keep_crowd) continue;
    targets[by_id.at(*a.image_id)].annotations.push_back(&a);
  }

  // Samples in the order of their ids, as torchvision's CocoDetection takes them.
  std::vector<std::size_t> order(reader.images.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return *reader.images[a].id < *reader.images[b].id; });
  std::erase_if(order, [&](std::size_t i) { return !options.keep_empty && targets[i].annotations.empty(); });

  auto packed = std::make_shared<std::vector<ImageTargets>>();
  DatasetIndexBuilder builder;
  for (std::size_t i : order) {
    const Image& image = reader.images[i];
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
