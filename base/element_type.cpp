// ElementType's sizes and NumPy's names for it (forkfeed/fields.h).
#include <array>
#include <string_view>

#include "forkfeed/fields.h"

namespace forkfeed {
namespace {

struct ElementInfo {
  ElementType type;
  std::size_t bytes;
  std::string_view name;
};

constexpr std::array<ElementInfo, 12> kElements{{
    {ElementType::kBool, 1, "bool"},
    {ElementType::kInt8, 1, "int8"},
    {ElementType::kUint8, 1, "uint8"},
    {ElementType::kInt16, 2, "int16"},
    {ElementType::kUint16, 2, "uint16"},
    {ElementType::kInt32, 4, "int32"},
    {ElementType::kUint32, 4, "uint32"},
    {ElementType::kInt64, 8, "int64"},
    {ElementType::kUint64, 8, "uint64"},
    {ElementType::kFloat16, 2, "float16"},
    {ElementType::kFloat32, 4, "float32"},
    {ElementType::kFloat64, 8, "float64"},
}};

constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < kElements.size(); ++i) {
    if (static_cast<std::size_t>(kElements[i].type) != i) return false;
  }
  return true;
}
static_assert(in_enum_order(), "kElements lists ElementType's values in their order");

// A value read from shared memory may be anything: it reads as bool, never out of bounds.
const ElementInfo& info(ElementType type) {
  const auto i = static_cast<std::size_t>(type);
  return kElements[i < kElements.size() ? i : 0];
}

}  // namespace

std::size_t element_bytes(ElementType type) { return info(type).bytes; }
std::string_view to_string(ElementType type) { return info(type).name; }

}  // namespace forkfeed
