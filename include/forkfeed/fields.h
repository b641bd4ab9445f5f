// Fields: a sample as several named values — an image and its caption, two views of one
// image, an array of targets, a JSON record — each a kind and the place its bytes come
// from. Without fields a sample is one image and one integer label, as it always was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/status.h"

namespace forkfeed {

// image:  decoded and transformed by a pipeline into dense pixels (uint8 or float32).
// label:  an int64: a .cls member's decimal integer, or an integer key of a .json member.
// text:   UTF-8 bytes (a .txt member), ragged.
// bytes:  raw bytes of the member (a .json, anything else), ragged.
// array:  a .npy member: its dtype and shape from its header; dense when every sample's
//         shape is the same, else ragged.
// number: a float64 scalar: a decimal member, or a number key of a .json member.
// mask:   class ids of the sample's image, pixel for pixel (a PNG of grey or palette indices,
//         or a 2-D .npy, the image's size): uint8 (or uint16), size x size, made by the
//         same draws as the schema's first image field — its crops, resizes (nearest),
//         flips and warps (nearest, `fill` moved in) — and untouched by colour ops,
//         Normalize and RandomErasing, as torchvision's ops on a mask tensor do.
// boxes:  the sample's boxes, float32 [K, 4] XYXY in the output image's pixels, ragged:
//         read from a key of a .json member or a [K, 4] .npy (`format`, absolute or
//         `normalized`), moved by the first image field's draws as torchvision.transforms.v2
//         moves BoundingBoxes (crops shift, resizes scale, flips mirror, warps take the
//         envelope of the four corners; each clamped to the image), then sanitised as
//         v2.SanitizeBoundingBoxes: a box narrower or lower than 1 pixel, of less than 1
//         square pixel, or NaN, is dropped.
// per_box: a value for each of the sample's boxes (their labels, areas, iscrowd), [K] of
//         int64 (or float32): from a key of a .json member or a 1-D .npy, the boxes that
//         sanitising drops dropped with them.
enum class FieldKind : std::uint8_t {
  kImage,
  kLabel,
  kText,
  kBytes,
  kArray,
  kNumber,
  kMask,
  kBoxes,
  kPerBox
};

// How a boxes field's source writes a box: corners (x1, y1, x2, y2), a corner and a size
// (x, y, w, h: COCO's), or a centre and a size (cx, cy, w, h: YOLO's).
enum class BoxFormat : std::uint8_t { kXyxy, kXywh, kCxcywh };

// The type of a field's elements: an image's uint8 or float32, a label's int64, a
// number's float64, text's and bytes' uint8, an array's as its .npy header says.
enum class ElementType : std::uint8_t {
  kBool,
  kInt8,
  kUint8,
  kInt16,
  kUint16,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat16,
  kFloat32,
  kFloat64,
};
// Bytes of one element.
std::size_t element_bytes(ElementType type);
// NumPy's name of it: "bool", "uint8", "float32", ...
std::string_view to_string(ElementType type);

// What a sample that lacks one of its fields does.
// error: the sample is bad data naming the shard, the key and the field (on_error
//        decides whether it fails the batch or is skipped).
// skip:  the sample is left out of its batch and counted as skipped.
// empty: the field is empty in that sample (no bytes; a label kMissingLabel, -1; a
//        number NaN; zeros in a dense array or image), and the field's per-sample flag
//        says it was missing.
enum class MissingField : std::uint8_t { kError, kSkip, kEmpty };

struct FieldSpec {
  // [A-Za-z_][A-Za-z0-9_]*, unique in the schema, not beginning with "__" (forkfeed's:
  // "__key__" is the samples' keys).
  std::string name;
  FieldKind kind = FieldKind::kBytes;
  // Where the field's bytes are. Shards: the member extensions it takes, any one of them,
  // lower-cased, as WebDataset spells them ("jpg", "png", "seg.png"). A manifest: the
  // name of its column (one entry).
  std::vector<std::string> sources;
  // kLabel or kNumber read from a .json member: the key whose value it is (read while
  // indexing); kBoxes or kPerBox read from one: the key of their list (read by a worker).
  std::string json_key;
  // A field that reads an earlier field's member instead of one of its own: an image field
  // whose sources are another image field's (a view of it: read and decoded once, each
  // view with its own pipeline and its own keyed draws), or a per_box field whose sources
  // are its boxes field's (one .json read for both).
  std::string member_of;
  // kMask: the class id of pixels a warp moves in from outside the image ("mask(fill=255)":
  // the usual ignore index; torchvision's fill, None being 0).
  std::uint16_t fill = 0;
  // kMask: uint8, or uint16 ("mask(dtype=uint16)": instance ids, Cityscapes' 16-bit PNGs).
  // kPerBox: int64, or float32 ("per_box(key=area, dtype=float32)").
  ElementType element = ElementType::kUint8;
  // kBoxes: how the source writes a box, and whether in pixels or as fractions of the
  // image's width and height ("boxes(key=boxes, format=cxcywh, normalized=true)").
  BoxFormat box_format = BoxFormat::kXyxy;
  bool normalized = false;
  bool operator==(const FieldSpec&) const = default;
};

// The most fields a schema holds.
inline constexpr std::size_t kMaxFields = 16;
// The most bytes a sample's key ("__key__": its member's name up to the first '.' of its
// last path component) takes, as PATH_MAX bounds a path: a longer key, or one that is not
// UTF-8, is bad data of its sample (on_error), found while indexing.
inline constexpr std::size_t kMaxKeyBytes = 4096;
// The most bytes of a boxes or per_box field's key.
inline constexpr std::size_t kMaxBoxKeyBytes = 63;
// The most dimensions an array field's sample has (a .npy of more is bad data).
inline constexpr std::size_t kMaxArrayRank = 6;

// The fields a loader reads, in the order they were written.
//   "image=jpg;png, caption=txt, label=cls, meta=json, emb=npy"
// Each entry is NAME=SOURCES[:KIND]. SOURCES are extensions (shards) or a column name
// (manifests), alternatives separated by ';'. KIND defaults from the first extension:
// an image extension -> image, cls -> label, txt -> text, npy -> array, anything else
// -> bytes; it may be written out: "score=json:number(score)", "label=json:label(class)"
// (a key of a .json member), "ids=ids.txt:bytes", "seg=seg.png:mask(fill=255)" or
// "inst=inst.png:mask(dtype=uint16)" (a mask
// follows the first image field, which the schema must have),
// "boxes=json:boxes(key=boxes, format=xywh), labels=json:per_box(key=labels)" or
// "boxes=boxes.npy:boxes, labels=labels.npy:per_box" (boxes follow the first image field;
// per_box fields follow the schema's one boxes field). An image field with the
// same sources as an earlier one is a view of it. Errors name the entry and what to write
// instead.
Result<std::vector<FieldSpec>> parse_fields(std::string_view text);
// The canonical text of `fields`: parse_fields(fields_text(f)) == f.
std::string fields_text(const std::vector<FieldSpec>& fields);

std::optional<FieldKind> parse_field_kind(std::string_view name);
std::optional<MissingField> parse_missing_field(std::string_view name);
std::string_view to_string(FieldKind kind);
std::string_view to_string(MissingField missing);
std::string_view to_string(BoxFormat format);

}  // namespace forkfeed
