// SlotFields: a schema's fields placed in a slot without overlap, aligned, sized for the
// worst batch, and a placement that does not fit its slot refused by whoever reads it.
#include "transport/slot_fields.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "loader/batch_factory.h"
#include "testing/temp_dataset.h"
#include "transport/slot_contents.h"

namespace forkfeed {
namespace {

constexpr std::uint32_t kBatch = 4;
constexpr std::uint64_t kPixels = 4096;  // where the pixels lie in the slot

std::vector<FieldDemand> clip_schema() {
  return {
      {"image", FieldKind::kImage, ElementType::kUint8, false, {8, 8, 3}, 0, kPixels},
      {"caption", FieldKind::kText, ElementType::kUint8, true, {}, 1000, 0},
      {"emb", FieldKind::kArray, ElementType::kFloat32, false, {8}, 0, 0},
      {"depth", FieldKind::kArray, ElementType::kUint16, true, {}, 333, 0},
      {std::string(kKeyField), FieldKind::kBytes, ElementType::kUint8, true, {}, 64, 0},
  };
}

// The byte ranges a region uses: [begin, end) pairs.
std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges(const FieldRegion& r) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out{{r.present, r.present + kBatch}};
  if (r.values != kPixels) out.emplace_back(r.values, r.values + r.capacity);
  if (r.ragged) out.emplace_back(r.offsets, r.offsets + (kBatch + 1) * 8);
  if (r.shapes) out.emplace_back(r.shapes, r.shapes + kBatch * kShapeWords * 8);
  return out;
}

TEST(SlotFields, FieldsArePlacedAfterThePixelsAlignedAndApart) {
  const auto demands = clip_schema();
  std::uint64_t end = 0;
  const std::uint64_t start = kPixels + kBatch * 8 * 8 * 3;
  auto placed = SlotFields::place(demands, kBatch, start, end);
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  ASSERT_EQ(placed->count, demands.size());

  const FieldRegion* image = placed->find("image");
  ASSERT_NE(image, nullptr);
  EXPECT_EQ(image->values, kPixels) << "the first image field is the pixels";
  EXPECT_EQ(image->sample_bytes, 8u * 8 * 3);
  EXPECT_EQ(image->rank, 3);
  const FieldRegion* emb = placed->find("emb");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->sample_bytes, 32u);
  EXPECT_EQ(emb->capacity, 32u * kBatch);
  EXPECT_EQ(placed->find("caption")->capacity, 1000u) << "a ragged field holds what the worst batch needs";
  EXPECT_NE(placed->find("depth")->shapes, 0u) << "a ragged array keeps each sample's shape";
  EXPECT_EQ(placed->find("caption")->shapes, 0u);
  EXPECT_EQ(placed->find("nothing"), nullptr);

  std::vector<std::pair<std::uint64_t, std::uint64_t>> all;
  for (const FieldRegion& r : placed->regions()) {
    for (const auto& range : ranges(r)) {
      EXPECT_EQ(range.first % 64, 0u) << r.field_name();
      EXPECT_GE(range.first, start) << r.field_name() << " overlaps the pixels";
      EXPECT_LE(range.second, end) << r.field_name();
      all.push_back(range);
    }
  }
  std::sort(all.begin(), all.end());
  for (std::size_t i = 1; i < all.size(); ++i)
    EXPECT_LE(all[i - 1].second, all[i].first) << "regions overlap";
  EXPECT_TRUE(placed->fit(end, kBatch));
}

TEST(SlotFields, APlacementOutsideItsSlotIsRefusedByItsReader) {
  std::uint64_t end = 0;
  auto placed = SlotFields::place(clip_schema(), kBatch, kPixels + 1000, end);
  ASSERT_TRUE(placed.ok());
  EXPECT_FALSE(placed->fit(end - 1, kBatch)) << "the last region ends past the slot";
  EXPECT_FALSE(placed->fit(end, kBatch + 1)) << "more samples than the regions were placed for";

  SlotFields forged = *placed;
  forged.fields[1].offsets = std::numeric_limits<std::uint64_t>::max() - 8;
  EXPECT_FALSE(forged.fit(end, kBatch));
  forged = *placed;
  forged.fields[2].sample_bytes = std::uint64_t{1} << 62;  // times the batch overflows
  EXPECT_FALSE(forged.fit(end, kBatch));
  forged = *placed;
  forged.count = kMaxSlotFields + 1;
  EXPECT_FALSE(forged.fit(end, kBatch));
}

TEST(SlotFields, ADemandThatCannotBePlacedIsRefusedNamingItsField) {
  std::uint64_t end = 0;
  std::vector<FieldDemand> huge{
      {"emb", FieldKind::kArray, ElementType::kFloat64, false, {1 << 30, 1 << 30, 1 << 30}, 0, 0}};
  auto placed = SlotFields::place(huge, kBatch, 0, end);
  ASSERT_FALSE(placed.ok());
  EXPECT_NE(placed.status().message().find("field 'emb'"), std::string::npos) << placed.status().message();

  std::vector<FieldDemand> deep{
      {"t", FieldKind::kArray, ElementType::kUint8, false, {1, 1, 1, 1, 1, 1, 1}, 0, 0}};
  EXPECT_FALSE(SlotFields::place(deep, kBatch, 0, end).ok());
  std::vector<FieldDemand> negative{{"t", FieldKind::kArray, ElementType::kUint8, false, {2, -1}, 0, 0}};
  EXPECT_FALSE(SlotFields::place(negative, kBatch, 0, end).ok());
  std::vector<FieldDemand> named{
      {std::string(kFieldNameBytes, 'x'), FieldKind::kText, ElementType::kUint8, true, {}, 1, 0}};
  EXPECT_FALSE(SlotFields::place(named, kBatch, 0, end).ok());
  std::vector<FieldDemand> many(kMaxSlotFields + 1,
                                FieldDemand{"f", FieldKind::kText, ElementType::kUint8, true, {}, 1, 0});
  auto refused = SlotFields::place(many, kBatch, 0, end);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("at most 17"), std::string::npos) << refused.status().message();
}

TEST(SlotFields, ElementTypesHaveNumPysNamesAndSizes) {
  EXPECT_EQ(to_string(ElementType::kFloat32), "float32");
  EXPECT_EQ(element_bytes(ElementType::kFloat32), 4u);
  EXPECT_EQ(to_string(ElementType::kBool), "bool");
  EXPECT_EQ(element_bytes(ElementType::kUint64), 8u);
  EXPECT_EQ(element_bytes(ElementType::kFloat16), 2u);
  EXPECT_EQ(to_string(static_cast<ElementType>(200)), "bool")
      << "a value from shared memory never reads out of bounds";
}

// A worker writes a batch's fields in place through SlotContents, a sample that fails
// part-way leaves nothing behind, and a Batch made in another mapping of the arena reads
// each field back by name.
TEST(SlotFields, FieldsAWorkerWritesAreWhatTheBatchReads) {
  testing::TempDir dir;
  auto index = DatasetIndex::from_image_folder(testing::make_image_folder(dir.path(), 6, 2));
  ASSERT_TRUE(index.ok()) << index.status().message();
  TransformSpec t{};
  std::strcpy(t.pipeline, "eval");
  t.size = 2;
  ArenaSpec spec{1, 2, 3, 2 * 2 * 3, t, OnError::kSkip};
  spec.fields = {
      {"image", FieldKind::kImage, ElementType::kUint8, false, {2, 2, 3}, 0, 0},
      {"label", FieldKind::kLabel, ElementType::kInt64, false, {}, 0, 0},
      {"caption", FieldKind::kText, ElementType::kUint8, true, {}, 40, 0},
      {"emb", FieldKind::kArray, ElementType::kFloat32, false, {2}, 0, 0},
      {"depth", FieldKind::kArray, ElementType::kUint16, true, {}, 64, 0},
  };
  auto made = Arena::create(spec, *index);
  ASSERT_TRUE(made.ok()) << made.status().message();
  const Arena& writer = **made;
  EXPECT_EQ(writer.control().fields.find("image")->values, writer.control().slots.pixels_offset);

  const SlotContents slot(writer, 1);
  const std::uint64_t samples[] = {4, 0, 5};
  ASSERT_EQ(slot.prepare(samples, *index, {}), 3u);
  const SlotFields& fields = slot.fields();
  const auto write = [&](std::string_view caption, float e, std::vector<std::int64_t> shape) {
    std::memset(slot.next_pixels(), static_cast<int>(caption.size()), 12);
    const FieldRegion& text = *fields.find("caption");
    std::memcpy(slot.next_ragged(text).data(), caption.data(), caption.size());
    slot.set_ragged(text, caption.size());
    slot.set_present(text, !caption.empty());
    const float emb[2] = {e, -e};
    std::memcpy(slot.next_dense(*fields.find("emb")), emb, sizeof emb);
    const FieldRegion& depth = *fields.find("depth");
    const std::uint64_t bytes = 2 * static_cast<std::uint64_t>(shape.empty() ? 1 : shape[0] * shape.back());
    std::memset(slot.next_ragged(depth).data(), 7, bytes);
    slot.set_ragged(depth, bytes, shape, ElementType::kUint16);
    for (const char* dense : {"image", "label", "emb", "depth"}) slot.set_present(*fields.find(dense), true);
  };
  write("a cat", 1.5f, {2, 3});
  slot.keep(0);
  write("this one fails part-way", 9.f, {4, 4});
  slot.skip(1, Status::BadData("its .npy header is bad"));
  write("", 2.5f, {1, 1});  // no caption: MissingField::kEmpty
  slot.keep(2);
  ASSERT_TRUE(slot.complete());

  auto reader = Arena::attach(UniqueFd(::dup(writer.fd())));
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const std::shared_ptr<Arena> read = std::move(reader).value();
  const SlotFields& placed = read->control().fields;
  ASSERT_TRUE(placed.written_fit(read->slot(1).base, 2));
  Batch batch = BatchFactory::make(*read, 1, 2, 0, 0, std::make_unique<detail::SlotLease>());
  BatchFactory::add_fields(batch, read->slot(1).base, std::shared_ptr<const SlotFields>(read, &placed));
  ASSERT_EQ(batch.fields().size(), 5u);
  EXPECT_EQ(batch.field("nothing"), nullptr);

  const FieldView& caption = *batch.field("caption");
  EXPECT_TRUE(caption.ragged());
  EXPECT_EQ(caption.text(0), "a cat");
  EXPECT_EQ(caption.text(1), "") << "the failed sample's caption is not the kept one's";
  EXPECT_TRUE(caption.present(0));
  EXPECT_FALSE(caption.present(1));
  const FieldView& emb = *batch.field("emb");
  EXPECT_FALSE(emb.ragged());
  ASSERT_EQ(emb.sample_shape().size(), 1u);
  EXPECT_EQ(emb.sample_shape()[0], 2);
  EXPECT_EQ(static_cast<const float*>(emb.data())[2], 2.5f) << "sample 1's emb is the third sample's";
  const FieldView& depth = *batch.field("depth");
  ASSERT_EQ(depth.shape(0).size(), 2u);
  EXPECT_EQ(depth.shape(0)[1], 3);
  EXPECT_EQ(depth.bytes(0).size(), 12u);
  EXPECT_EQ(depth.bytes(1).size(), 2u);
  EXPECT_EQ(depth.element(1), ElementType::kUint16);
  const FieldView& label = *batch.field("label");
  EXPECT_EQ(label.data(), batch.labels().data()) << "the first label field is the labels";
  EXPECT_EQ(static_cast<const std::int64_t*>(label.data())[1], index->label(5));
  EXPECT_EQ(batch.field("image")->data(), batch.data()) << "the first image field is the pixels";
  EXPECT_EQ(static_cast<const std::uint8_t*>(batch.data())[12], 0u);

  // What a worker wrote past its region is refused by the reader.
  auto* offsets = reinterpret_cast<std::uint64_t*>(writer.slot(1).base + placed.find("caption")->offsets);
  const std::uint64_t written = std::exchange(offsets[2], 41);
  EXPECT_FALSE(placed.written_fit(read->slot(1).base, 2));
  offsets[2] = written;
  ASSERT_TRUE(placed.written_fit(read->slot(1).base, 2));
  // And a shape that is not its bytes, which a view of that shape would read past.
  auto* shapes = reinterpret_cast<std::int64_t*>(writer.slot(1).base + placed.find("depth")->shapes);
  shapes[kShapeWords + 2] = 1000;
  EXPECT_FALSE(placed.written_fit(read->slot(1).base, 2)) << "a [1000, 1] uint16 sample of 2 bytes";
  shapes[kShapeWords + 2] = -1;
  EXPECT_FALSE(placed.written_fit(read->slot(1).base, 2)) << "a negative dimension";
}

}  // namespace
}  // namespace forkfeed
