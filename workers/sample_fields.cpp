// SampleFields: one sample of a schema, field by field, into its slot.
#include "workers/sample_fields.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <new>
#include <optional>
#include <string>

#include <opencv2/core.hpp>

#include "base/printable.h"
#include "base/utf8.h"
#include "formats/member_key.h"
#include "formats/npy_header.h"
#include "formats/tar_format.h"
#include "formats/tar_scan.h"
#include "workers/mask_decoder.h"

namespace forkfeed {
namespace {

Status about(const FieldRegion& r, const Status& s) {
  return Status::FromCode(s.code(), "field '" + std::string(r.field_name()) + "': " + s.message());
}

// Appends `data` as the next sample's value of ragged field `r`, with an array's shape.
Status append_ragged(const FieldRegion& r, FileBytes data, const SlotContents& slot,
                     std::span<const std::int64_t> shape = {}, ElementType element = ElementType::kUint8) {
  const std::span<std::byte> room = slot.next_ragged(r);
  if (data.size() > room.size()) {
    return Status::Internal(std::to_string(data.size()) + " bytes do not fit in the " +
                            std::to_string(room.size()) + " left of the slot's region: was it indexed so?");
  }
  std::memcpy(room.data(), data.data(), data.size());
  slot.set_ragged(r, data.size(), shape, element);
  return Status::Ok();
}

}  // namespace

SampleFields::SampleFields(const ControlBlock& control, DecodePath path)
    : control_(control), reader_(control.transform.max_file_bytes) {
  std::uint64_t images = 0;
  for (std::uint32_t f = 0; f < control.fields.count; ++f) {
    if (control.fields.fields[f].field_name() == kKeyField) {
      keys_ = &control.fields.fields[f];
      continue;
    }
    Field field{&control.fields.fields[f], control.field_columns[f], nullptr, 0};
    if (field.region->kind == FieldKind::kImage) {
      field.image = std::make_unique<SamplePipeline>(control.field_transforms[f], path);
      field.draws = images++;
      field.layout = control.field_transforms[f].layout;
    }
    follows_ = follows_ || field.region->kind == FieldKind::kMask || field.region->kind == FieldKind::kBoxes;
    fields_.push_back(std::move(field));
  }
  // Members in column order, so that views follow the image they view and take the bytes
  // it read: a member is read once however many fields decode it. Masks and boxes after
  // the image they follow, per_box fields after their boxes (sharing their member).
  std::stable_sort(fields_.begin(), fields_.end(), [](const Field& a, const Field& b) {
    const auto key = [](const Field& f) {
      const std::int64_t column = f.column.column;
      switch (f.region->kind) {
        case FieldKind::kMask: return std::int64_t{kMaxSlotFields} + column;
        case FieldKind::kBoxes: return 2 * std::int64_t{kMaxSlotFields} + column;
        case FieldKind::kPerBox: return 3 * std::int64_t{kMaxSlotFields} + column;
        default: return f.column.store == FieldColumn::Store::kMember ? column : -1;
      }
    };
    return key(a) < key(b);
  });
  const auto first_image = std::find_if(fields_.begin(), fields_.end(),
                                        [](const Field& f) { return f.image != nullptr && f.draws == 0; });
  if (first_image != fields_.end() && first_image->image->needs_boxes()) {
    const auto boxes = std::find_if(fields_.begin(), fields_.end(),
                                    [](const Field& f) { return f.region->kind == FieldKind::kBoxes; });
    if (boxes != fields_.end()) plan_boxes_ = &*boxes;  // the loader refuses the pipeline without one
  }
}

Status SampleFields::read_boxes_to_plan(const PackedSamples& packed, std::uint64_t sample) {
  const FieldRegion& r = *plan_boxes_->region;
  geometry_.boxes.clear();
  geometry_.box_format = r.box_format;
  geometry_.box_normalized = r.normalized != 0;
  const SampleSource source = packed.member_source(sample, plan_boxes_->column.column);
  if (source.size == FieldSlice::kMissing) return Status::Ok();
  auto read = reader_.read(source);
  if (!read.ok()) return about_member(r, source, read.status());
  const bool json = !r.json_key().empty();
  Status s = box_values_.read(*read, json);
  if (s.ok()) s = box_values_.rows(r.json_key(), 4, box_floats_);
  if (!s.ok()) return about_member(r, source, s);
  // A .json's parsed values stay for the boxes and per_box fields; a .npy's are read from
  // the reader's buffer, which the image's member will take: read again when written.
  if (json) box_column_ = plan_boxes_->column.column;
  for (std::size_t i = 0; i + 4 <= box_floats_.size(); i += 4)
    geometry_.boxes.push_back({box_floats_[i], box_floats_[i + 1], box_floats_[i + 2], box_floats_[i + 3]});
  return Status::Ok();
}

Status SampleFields::run(const SharedIndex& index, std::uint64_t epoch, std::uint64_t sample,
                         const SlotContents& slot) {
  // The reader's buffer grows to the largest member: an allocation failure must not
  // escape a worker, where a crash would pin it on the sample as bad data.
  try {
    return write_all(index, epoch, sample, slot);
  } catch (const std::bad_alloc&) {
    return decode_failure(true, "cannot read the sample's fields", "std::bad_alloc");
  } catch (const cv::Exception& e) {  // a mask's buffers, allocated by OpenCV
    return decode_failure(e.code == cv::Error::StsNoMem, "cannot decode the sample's fields",
                          printable(e.what()));
  }
}

Status SampleFields::write_all(const SharedIndex& index, std::uint64_t epoch, std::uint64_t sample,
                               const SlotContents& slot) {
  const PackedSamples packed = index.packed();
  std::optional<std::uint32_t> read_column;  // whose bytes `bytes` are
  FileBytes bytes;
  // The key's headers lie just before the sample's slice: read with it when it is read.
  const std::uint64_t name_bytes = keys_ != nullptr ? packed.name_bytes(sample) : 0;
  bool keyed = keys_ == nullptr;
  followed_ = false;
  boxed_ = false;
  box_column_.reset();
  if (plan_boxes_ != nullptr) {
    if (Status s = read_boxes_to_plan(packed, sample); !s.ok()) return s;
  }
  for (const Field& f : fields_) {
    const FieldRegion& r = *f.region;
    slot.set_present(r, true);
    switch (f.column.store) {
      case FieldColumn::Store::kLabel: {
        // The first label field is the slot's labels, which prepare() filled.
        if (f.column.column == 0) {
          if (index.labels[sample] == kMissingLabel) slot.set_present(r, false);
          break;
        }
        const std::int64_t label = index.field_label(sample, f.column.column - 1);
        if (label == kMissingLabel) slot.set_present(r, false);
        std::memcpy(slot.next_dense(r), &label, sizeof label);
        break;
      }
      case FieldColumn::Store::kNumber: {
        const double number = index.field_number(sample, f.column.column);
        if (std::isnan(number)) slot.set_present(r, false);
        std::memcpy(slot.next_dense(r), &number, sizeof number);
        break;
      }
      case FieldColumn::Store::kMember: {
        const SampleSource source = packed.member_source(sample, f.column.column);
        if (source.size == FieldSlice::kMissing) {  // only under missing=empty: the loader skips the others
          if (r.kind == FieldKind::kPerBox && boxed_) {
            return about(
                r, Status::BadData("has no member, but its boxes have one: a per_box field holds a value "
                                   "for each box, so a sample with boxes needs its member too"));
          }
          write_missing(r, slot, f.layout);
          break;
        }
        if (read_column != f.column.column) {
          const std::uint64_t before = f.column.column == 0 ? name_bytes : 0;
          auto read = reader_.read(source, before);
          if (!read.ok()) return about_member(r, source, read.status());
          bytes = *read;
          read_column = f.column.column;
          if (before > 0) {
            if (Status s = write_key(bytes.first(before), source.file, slot); !s.ok()) return s;
            bytes = bytes.subspan(before);
            keyed = true;
          }
        }
        if (Status s = write_member(f, bytes, epoch, sample, slot); !s.ok())
          return about_member(r, source, s);
        break;
      }
    }
  }
  if (keyed) return Status::Ok();
  // Its slice's member is missing (missing=empty): the headers alone.
  SampleSource headers = packed.source(sample);
  headers.size = 0;
  auto read = reader_.read(headers, name_bytes);
  if (!read.ok()) return about(*keys_, read.status());
  return write_key(*read, headers.file, slot);
}

Status SampleFields::about_member(const FieldRegion& r, SampleSource source, const Status& s) {
  // The error names the sample by its first member (the caller, DatasetIndex::describe);
  // this one's name is in the header block just before its data (a long name cut short).
  source.size = 0;
  auto header = reader_.read(source, tar::kBlock);
  Result<std::string> name = header.ok() ? member_name_in(*header, source.file) : header.status();
  if (!name.ok()) return about(r, s);
  return Status::FromCode(s.code(), "field '" + std::string(r.field_name()) + "' (member '" +
                                        printable_cut(*name) + "'): " + s.message());
}

Status SampleFields::write_key(FileBytes headers, std::string_view shard, const SlotContents& slot) const {
  slot.set_present(*keys_, true);
  Result<std::string> name = member_name_in(headers, shard);
  if (!name.ok()) return about(*keys_, name.status());
  const std::optional<MemberKey> split = split_member_name(*name);
  if (!split) return about(*keys_, Status::BadData("member " + printable_cut(*name) + " has no key"));
  const std::string_view key = split->key;
  const Status s = append_ragged(*keys_, {reinterpret_cast<const std::byte*>(key.data()), key.size()}, slot);
  return s.ok() ? s : about(*keys_, s);
}

Status SampleFields::write_member(const Field& f, FileBytes bytes, std::uint64_t epoch, std::uint64_t sample,
                                  const SlotContents& slot) {
  const FieldRegion& r = *f.region;
  switch (r.kind) {
    case FieldKind::kImage: {
      // The first image field draws as a loader without fields does; the others (views
      // among them) each from a stream of their own.
      KeyedRng rng = f.draws == 0 ? KeyedRng({control_.transform.seed, epoch, sample})
                                  : KeyedRng({control_.transform.seed, epoch, sample, f.draws});
      return write_image(f, bytes, rng, slot);
    }
    case FieldKind::kMask: return write_mask(r, bytes, slot);
    case FieldKind::kBoxes: return write_boxes(r, bytes, f.column.column, slot);
    case FieldKind::kPerBox: return write_per_box(r, bytes, f.column.column, slot);
    case FieldKind::kText: {
      const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      if (const std::size_t valid = valid_utf8_prefix(text); valid != text.size()) {
        return Status::BadData("is not UTF-8 at byte " + std::to_string(valid));
      }
      [[fallthrough]];
    }
    case FieldKind::kBytes: return append_ragged(r, bytes, slot);
    case FieldKind::kArray: return write_array(r, bytes, slot);
    default: return Status::Internal("a field of kind " + std::string(to_string(r.kind)) + " has a member");
  }
}

Status SampleFields::write_image(const Field& f, FileBytes bytes, KeyedRng rng, const SlotContents& slot) {
  const FieldRegion& r = *f.region;
  const bool followed = follows_ && f.draws == 0;
  // Each sample its own size: written into the room left, which holds one of max_size (the
  // transform refuses a larger one before it writes).
  std::byte* out = r.ragged == 0 ? slot.next_dense(r) : slot.next_ragged(r).data();
  Status s = f.image->decode(bytes, rng, out, followed ? &geometry_ : nullptr);
  followed_ = followed_ || (followed && s.ok());
  if (!s.ok() || r.ragged == 0) return s;
  const cv::Size size = f.image->output_size();
  const std::int64_t h = size.height, w = size.width;
  const std::array<std::int64_t, 3> shape =
      f.layout == Layout::kNchw ? std::array<std::int64_t, 3>{3, h, w} : std::array<std::int64_t, 3>{h, w, 3};
  slot.set_ragged(r, static_cast<std::uint64_t>(h * w * 3) * element_bytes(r.element), shape, r.element);
  return Status::Ok();
}

Status SampleFields::write_array(const FieldRegion& r, FileBytes bytes, const SlotContents& slot) {
  const std::string_view member(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  auto header = parse_npy_header(member, member.size());
  if (!header.ok()) return header.status();
  const FileBytes data = bytes.subspan(header->data_offset, header->data_bytes);
  if (r.ragged == 0) {
    if (header->dtype != r.element) {
      return Status::BadData("its .npy holds " + std::string(to_string(header->dtype)) + ", the field " +
                             std::string(to_string(r.element)));
    }
    const std::span<const std::int64_t> want(r.shape, r.rank);
    if (!std::equal(want.begin(), want.end(), header->shape.begin(), header->shape.end())) {
      return Status::BadData("its .npy has shape " + npy_shape_text(header->shape) + ", the field " +
                             npy_shape_text({want.begin(), want.end()}));
    }
    std::memcpy(slot.next_dense(r), data.data(), data.size());
    return Status::Ok();
  }
  if (header->shape.size() > kMaxFieldRank) {
    return Status::BadData("its .npy has " + std::to_string(header->shape.size()) + " dimensions; at most " +
                           std::to_string(kMaxFieldRank) + " are carried");
  }
  return append_ragged(r, data, slot, header->shape, header->dtype);
}

Status SampleFields::write_mask(const FieldRegion& r, FileBytes bytes, const SlotContents& slot) {
  if (!followed_) {  // its image is missing (missing=empty): so is what it would follow
    write_missing(r, slot);
    return Status::Ok();
  }
  const cv::Size image(geometry_.width, geometry_.height);
  const int type = r.element == ElementType::kUint16 ? CV_16UC1 : CV_8UC1;
  cv::Mat mask;
  if (Status s = decode_mask(bytes, image, type, mask_storage_, mask, last_source_row(geometry_)); !s.ok())
    return s;
  if (r.ragged == 0) {
    cv::Mat out(static_cast<int>(r.shape[0]), static_cast<int>(r.shape[1]), type, slot.next_dense(r));
    follow(geometry_, mask, r.fill, out);
    return Status::Ok();
  }
  // Its image's size, each sample its own.
  const cv::Size size = output_size(geometry_);
  cv::Mat out(size, type, slot.next_ragged(r).data());
  follow(geometry_, mask, r.fill, out);
  const std::array<std::int64_t, 2> shape{size.height, size.width};
  slot.set_ragged(r, out.total() * out.elemSize(), shape, r.element);
  return Status::Ok();
}

Status SampleFields::read_box_member(const FieldRegion& r, FileBytes bytes, std::uint32_t column) {
  if (box_column_ == column) return Status::Ok();
  box_column_.reset();
  if (Status s = box_values_.read(bytes, !r.json_key().empty()); !s.ok()) return s;
  box_column_ = column;
  return Status::Ok();
}

Status SampleFields::write_boxes(const FieldRegion& r, FileBytes bytes, std::uint32_t column,
                                 const SlotContents& slot) {
  kept_.clear();
  if (!followed_) {  // its image is missing (missing=empty): so are its boxes
    write_missing(r, slot);
    return Status::Ok();
  }
  if (Status s = read_box_member(r, bytes, column); !s.ok()) return s;
  if (Status s = box_values_.rows(r.json_key(), 4, box_floats_); !s.ok()) return s;
  const cv::Size decoded(geometry_.width, geometry_.height);
  boxes_.resize(box_floats_.size() / 4);
  for (std::size_t i = 0; i < boxes_.size(); ++i) {
    const Box b{box_floats_[4 * i], box_floats_[4 * i + 1], box_floats_[4 * i + 2], box_floats_[4 * i + 3]};
    boxes_[i] = to_xyxy(b, r.box_format, r.normalized != 0, decoded);
  }
  follow_boxes(geometry_, boxes_);
  const cv::Size size = output_size(geometry_);
  std::size_t n = 0;
  for (std::size_t i = 0; i < boxes_.size(); ++i) {
    if (!keeps_box(boxes_[i], size)) continue;
    kept_.push_back(static_cast<std::uint32_t>(i));
    boxes_[n++] = boxes_[i];
  }
  boxes_read_ = boxes_.size();
  boxed_ = true;
  const std::array<std::int64_t, 2> shape{static_cast<std::int64_t>(n), 4};
  return append_ragged(r, std::as_bytes(std::span(boxes_.data(), n)), slot, shape, ElementType::kFloat32);
}

Status SampleFields::write_per_box(const FieldRegion& r, FileBytes bytes, std::uint32_t column,
                                   const SlotContents& slot) {
  if (!boxed_) {  // its boxes are missing: so are their values
    write_missing(r, slot);
    return Status::Ok();
  }
  if (Status s = read_box_member(r, bytes, column); !s.ok()) return s;
  const auto keep = [&](auto& values) -> Status {
    if (Status s = box_values_.rows(r.json_key(), 1, values); !s.ok()) return s;
    if (values.size() != boxes_read_) {
      return Status::BadData("it holds " + std::to_string(values.size()) + " values for the sample's " +
                             std::to_string(boxes_read_) + " boxes; a per_box field has one a box");
    }
    for (std::size_t i = 0; i < kept_.size(); ++i) values[i] = values[kept_[i]];
    const std::array<std::int64_t, 1> shape{static_cast<std::int64_t>(kept_.size())};
    return append_ragged(r, std::as_bytes(std::span(values.data(), kept_.size())), slot, shape, r.element);
  };
  return r.element == ElementType::kFloat32 ? keep(box_floats_) : keep(box_ints_);
}

void SampleFields::write_missing(const FieldRegion& r, const SlotContents& slot, Layout layout) {
  slot.set_present(r, false);
  if (r.kind == FieldKind::kBoxes || r.kind == FieldKind::kPerBox) {  // no boxes: [0, 4] and [0]
    static constexpr std::array<std::int64_t, 2> kNoBoxes{0, 4};
    slot.set_ragged(r, 0, std::span(kNoBoxes).first(r.kind == FieldKind::kBoxes ? 2 : 1), r.element);
  } else if (r.ragged != 0 && r.kind == FieldKind::kImage) {  // of each its own size: [0, 0, 3] or [3, 0, 0]
    static constexpr std::array<std::int64_t, 3> kNoImage{0, 0, 3}, kNoPlanes{3, 0, 0};
    slot.set_ragged(r, 0, layout == Layout::kNchw ? kNoPlanes : kNoImage, r.element);
  } else if (r.ragged != 0 && r.kind == FieldKind::kMask) {
    static constexpr std::array<std::int64_t, 2> kNoMask{0, 0};
    slot.set_ragged(r, 0, kNoMask, r.element);
  } else if (r.ragged != 0 && has_shapes(r.kind)) {  // an array of no values, [0], not a 0-d one
    static constexpr std::array<std::int64_t, 1> kNoValues{0};
    slot.set_ragged(r, 0, kNoValues, r.element);
  } else if (r.ragged != 0) {
    slot.set_ragged(r, 0);
  } else {
    std::memset(slot.next_dense(r), 0, r.sample_bytes);
  }
}

}  // namespace forkfeed
