// read_coco_records: the SAX events of a COCO instances file, kept where they say something
// of an image, an annotation or a category (tools/shard/coco_reader.h).
#include "tools/shard/coco_reader.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/printable.h"

namespace forkfeed {
namespace {

using json = nlohmann::json;

// Python's json, and so pycocotools, stops near 1000 levels (the recursion limit); a COCO
// file has 6. Deeper, only the parser's stacks would grow.
constexpr std::size_t kMaxDepth = 1000;

// The keys the records keep: of an entry (depth 3) and of an RLE (depth 4).
enum class Field {
  kOther,
  kId,
  kFileName,
  kWidth,
  kHeight,
  kImageId,
  kCategoryId,
  kBbox,
  kIscrowd,
  kArea,
  kSegmentation,
  kCounts,
  kSize
};

Field field_named(std::string_view key) {
  static constexpr std::pair<std::string_view, Field> kFields[] = {
      {"id", Field::kId},         {"file_name", Field::kFileName},        {"width", Field::kWidth},
      {"height", Field::kHeight}, {"image_id", Field::kImageId},          {"category_id", Field::kCategoryId},
      {"bbox", Field::kBbox},     {"iscrowd", Field::kIscrowd},           {"area", Field::kArea},
      {"counts", Field::kCounts}, {"segmentation", Field::kSegmentation}, {"size", Field::kSize}};
  for (const auto& [name, field] : kFields) {
    if (key == name) return field;
  }
  return Field::kOther;
}

// Where a value lies, for the places COCO gives a kind of value to: an annotation's bbox
// (a list of numbers) and, with masks, its segmentation (a list of polygons, each a list
// of numbers, or an RLE: {"counts": a list of numbers or a string, "size": [h, w]}).
enum class Slot {
  kNone,   // nothing kept
  kField,  // an entry's other fields: what read_coco needs of them it checks (an id that is no integer)
  kBbox,
  kBboxNumber,
  kSegmentation,
  kPolygon,
  kCoordinate,
  kCounts,
  kCount,
  kSize,
  kSizeNumber,
};

// The message for `kind` ("the string \"x\"", "null", "a list") at `at`, polygon `polygon`.
std::string misread_text(Slot at, const std::string& kind, std::size_t polygon) {
  switch (at) {
    case Slot::kBbox: return "its bbox is " + kind + " where COCO's is a list [x, y, w, h]";
    case Slot::kBboxNumber: return "its bbox holds " + kind + " where COCO's [x, y, w, h] has numbers";
    case Slot::kSegmentation:
      return "its segmentation is " + kind +
             " where pycocotools takes a list of polygons or an RLE {\"counts\": ..., \"size\": [h, w]}";
    case Slot::kPolygon:
      if (kind == "an object") {
        return "its segmentation lists an object: pycocotools merges a list of RLEs, which "
               "forkfeed-shard does not read; give the one RLE {\"counts\": ..., \"size\": [h, w]}, or "
               "polygons";
      }
      return "its segmentation lists " + kind +
             " where pycocotools takes a polygon (a list [x1, y1, x2, y2, ...])";
    case Slot::kCoordinate:
      return "its polygon #" + std::to_string(polygon) + " holds " + kind +
             " where pycocotools takes numbers (x1, y1, x2, y2, ...)";
    case Slot::kCounts:
      return "its RLE's counts are " + kind +
             " where pycocotools takes a list of counts or a compressed string";
    case Slot::kCount: return "its RLE's counts hold " + kind + " where pycocotools takes counts of pixels";
    case Slot::kSize: return "its RLE's size is " + kind + " where pycocotools takes [height, width]";
    case Slot::kSizeNumber:
      return "its RLE's size holds " + kind + " where pycocotools takes [height, width]";
    case Slot::kNone:
    case Slot::kField: break;
  }
  return {};
}

// The SAX events of the file, kept where they say something of an image, an annotation or
// a category: the top object's "images", "annotations" and "categories" lists, the fields
// of their entries, and with `segmentations` what is inside an annotation's segmentation.
class CocoReader : public nlohmann::json_sax<json> {
 public:
  CocoReader(JsonTextScan& scan, HeldBytes& held, bool segmentations)
      : scan_(scan), held_(held), segmentations_(segmentations) {}

  CocoRecords records;
  bool saw_images = false;
  Status error;  // why parsing stopped, when a handler stopped it

  // Each handler stops the parse once the scan says so (past the bound).
  bool null() override {
    scan_.after_token();
    return !stopped() && misplaced(slot(), "null");
  }
  bool boolean(bool v) override {
    scan_.after_token();
    return !stopped() && misplaced(slot(), v ? "true" : "false");
  }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v), v); }
  bool number_unsigned(number_unsigned_t v) override {
    const bool fits = v <= static_cast<number_unsigned_t>(std::numeric_limits<std::int64_t>::max());
    return number(static_cast<double>(v), fits ? std::optional<std::int64_t>(v) : std::nullopt);
  }
  bool number_float(number_float_t v, const string_t&) override { return number(v, std::nullopt); }
  bool string(string_t& s) override {
    scan_.after_token();
    if (stopped()) return false;
    const Slot at = slot();
    if (at == Slot::kField && section_ == Section::kImages && field_ == Field::kFileName) {
      records.images.back().file_name = s;
      return hold(s.size());
    }
    if (at == Slot::kCounts) {
      records.annotations.back().compressed = s;
      return hold(s.size());
    }
    if (at == Slot::kNone || at == Slot::kField) return true;
    return misplaced(at, "the string \"" + printable_cut(s, 40) + "\"");
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    if (stopped()) return false;
    const Slot at = slot();
    if (!open(false)) return false;
    if (depth() == 3 && in_entry()) {
      switch (section_) {
        case Section::kImages:
          records.images.push_back({.entry = records.images.size()});
          return hold(sizeof(CocoImage));
        case Section::kAnnotations:
          records.annotations.push_back({.entry = records.annotations.size()});
          return hold(sizeof(CocoAnnotation));
        case Section::kCategories:
          records.categories.push_back({.entry = records.categories.size()});
          return true;
        case Section::kOther: break;
      }
    }
    if (at == Slot::kSegmentation) {
      records.annotations.back().rle = true;
      return true;
    }
    return misplaced(at, "an object");
  }
  bool key(string_t& k) override {
    scan_.after_token();
    if (stopped()) return false;
    if (depth() == 1) {
      section_ = k == "images"        ? Section::kImages
                 : k == "annotations" ? Section::kAnnotations
                 : k == "categories"  ? Section::kCategories
                                      : Section::kOther;
      // Python's json (and so pycocotools) keeps the last of a key given twice; a reader
      // here would see both: refused rather than either.
      const unsigned bit = 1u << static_cast<int>(section_);
      if (section_ != Section::kOther && (sections_seen_ & bit) != 0) {
        error = Status::BadData("has the key \"" + k + "\" twice: keep one list");
        return false;
      }
      sections_seen_ |= bit;
    } else if (depth() == 3) {
      field_ = field_named(k);
    } else if (depth() == 4) {
      inner_ = field_named(k);
    }
    return true;
  }
  bool end_object() override { return !stopped() && close(); }
  bool start_array(std::size_t) override {
    if (stopped()) return false;
    const Slot at = slot();
    if (!open(true)) return false;
    if (depth() == 2 && section_ == Section::kImages) saw_images = true;
    switch (at) {
      case Slot::kPolygon:
        records.annotations.back().polygons.emplace_back();
        return hold(sizeof(std::vector<double>));
      case Slot::kBboxNumber:
      case Slot::kCoordinate:
      case Slot::kCount:
      case Slot::kSizeNumber: return misplaced(at, "a list");
      default: return true;
    }
  }
  bool end_array() override { return !stopped() && close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (error.ok()) error = Status::BadData(scan_.why_not_json(e.what(), value_end_));
    return false;
  }

 private:
  enum class Section { kOther, kImages, kAnnotations, kCategories };

  bool stopped() const { return !scan_.status().ok(); }
  std::size_t depth() const { return arrays_.size(); }
  // An entry's object: depth 3, in a list at depth 2 of a section.
  bool in_entry() const { return depth() >= 3 && arrays_[1] && !arrays_[2] && section_ != Section::kOther; }
  // Where the value of the next event lies (before a container it opens is counted).
  Slot slot() const {
    if (depth() < 3 || !in_entry()) return Slot::kNone;
    const bool annotation = section_ == Section::kAnnotations;
    const bool segmentation = annotation && segmentations_ && field_ == Field::kSegmentation;
    if (depth() == 3) {
      if (annotation && field_ == Field::kBbox) return Slot::kBbox;
      return segmentation ? Slot::kSegmentation : Slot::kField;
    }
    // Within a bbox or segmentation: once one value is misread, the rest of the
    // annotation's is not kept (it is refused).
    if (!annotation || !records.annotations.back().misread.empty()) return Slot::kNone;
    if (field_ == Field::kBbox) return depth() == 4 ? Slot::kBboxNumber : Slot::kNone;
    if (!segmentation) return Slot::kNone;
    if (arrays_[3]) {  // a list of polygons
      if (depth() == 4) return Slot::kPolygon;
      return depth() == 5 ? Slot::kCoordinate : Slot::kNone;
    }
    const bool counts = inner_ == Field::kCounts, size = inner_ == Field::kSize;
    if (depth() == 4) return counts ? Slot::kCounts : size ? Slot::kSize : Slot::kNone;
    if (depth() == 5 && arrays_[4]) return counts ? Slot::kCount : size ? Slot::kSizeNumber : Slot::kNone;
    return Slot::kNone;
  }
  // Notes `kind` at `at` on the annotation, when it is not COCO's kind there.
  bool misplaced(Slot at, std::string_view kind) {
    if (at == Slot::kNone || at == Slot::kField) return true;
    CocoAnnotation& a = records.annotations.back();
    if (!a.misread.empty()) return true;
    a.misread = misread_text(at, std::string(kind), a.polygons.empty() ? 0 : a.polygons.size() - 1);
    return hold(a.misread.size());
  }
  bool open(bool array) {
    if (depth() >= kMaxDepth) {
      error = Status::BadData("nests lists and objects more than " + std::to_string(kMaxDepth) +
                              " deep at byte " + std::to_string(scan_.offset()) +
                              ", past what Python's json (and so pycocotools) reads; a COCO file has 6");
      return false;
    }
    arrays_.push_back(array);
    return true;
  }
  bool close() {
    arrays_.pop_back();
    if (arrays_.empty()) value_end_ = scan_.offset();
    return true;
  }
  bool number(double v, std::optional<std::int64_t> integer) {
    scan_.after_number();
    if (stopped()) return false;
    const Slot at = slot();
    switch (at) {
      case Slot::kBboxNumber: {
        CocoAnnotation& a = records.annotations.back();
        if (a.bbox_numbers < 4) a.bbox[a.bbox_numbers] = v;
        ++a.bbox_numbers;
        return true;
      }
      case Slot::kCoordinate:  // [[x1, y1, x2, y2, ...], ...]
        records.annotations.back().polygons.back().push_back(v);
        return hold(sizeof(double));
      case Slot::kCount: {
        // pycocotools takes counts as np.uint32: a whole 5.0 too.
        CocoAnnotation& a = records.annotations.back();
        const bool count = v >= 0 && v <= std::numeric_limits<std::uint32_t>::max() && v == std::floor(v);
        if (!count && !a.bad_count) a.bad_count = v;
        a.counts.push_back(count ? static_cast<std::uint32_t>(v) : 0);
        return hold(sizeof(std::uint32_t));
      }
      case Slot::kSizeNumber:
        records.annotations.back().size.push_back(integer.value_or(-1));
        return hold(sizeof(std::int64_t));
      case Slot::kField: field(v, integer); return true;
      case Slot::kNone: return true;
      default: return misplaced(at, "the number " + number_text(v));
    }
  }
  void field(double v, std::optional<std::int64_t> integer) {
    switch (section_) {
      case Section::kImages: {
        CocoImage& image = records.images.back();
        if (field_ == Field::kId) image.id = integer;
        if (field_ == Field::kWidth) image.width = integer;
        if (field_ == Field::kHeight) image.height = integer;
        break;
      }
      case Section::kAnnotations: {
        CocoAnnotation& a = records.annotations.back();
        if (field_ == Field::kId) a.id = integer;
        if (field_ == Field::kImageId) a.image_id = integer;
        if (field_ == Field::kCategoryId) a.category_id = integer;
        if (field_ == Field::kIscrowd) a.crowd = v != 0;
        if (field_ == Field::kArea) a.area = v;
        break;
      }
      case Section::kCategories:
        if (field_ == Field::kId) records.categories.back().id = integer;
        break;
      case Section::kOther: break;
    }
  }
  // Counts `bytes` more held; false (stopping the parse) past the bound.
  bool hold(std::uint64_t bytes) {
    held_.records += bytes;
    if (!held_.over()) return true;
    error = Status::ResourceExhausted(
        "more images and annotations than " + std::to_string(held_.max >> 20) +
        " MiB of memory hold (at image " + std::to_string(records.images.size()) + ", annotation " +
        std::to_string(records.annotations.size()) +
        "): raise --coco-max-mib, or split it into files of fewer images, each packed into shards");
    return false;
  }
  JsonTextScan& scan_;
  HeldBytes& held_;
  bool segmentations_;
  std::vector<bool> arrays_;  // per open container, whether it is a list
  Section section_ = Section::kOther;
  Field field_ = Field::kOther;             // the key of an entry's field
  Field inner_ = Field::kOther;             // a key of an object in an entry (an RLE's)
  unsigned sections_seen_ = 0;              // a bit per Section
  std::optional<std::uint64_t> value_end_;  // where the top value closed, once it has
};

}  // namespace

std::string number_text(double v) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return ec == std::errc() ? std::string(text, end) : std::to_string(v);
}

Result<CocoRecords> read_coco_records(const MappedFile& file, bool segmentations,
                                      std::uint64_t max_held_bytes) {
  HeldBytes held{.max = max_held_bytes};
  JsonTextScan scan(file, held);
  CocoReader reader(scan, held, segmentations);
  const bool parsed = json::sax_parse(scan.begin(), scan.end(), &reader);
  scan.catch_up();
  if (!scan.status().ok()) return scan.status();
  if (!reader.error.ok()) return reader.error;
  if (!parsed || !reader.saw_images) {
    return Status::BadData(
        "no \"images\" list: is it an instances_*.json (annotations/ of a COCO download)?");
  }
  return std::move(reader.records);
}

}  // namespace forkfeed
