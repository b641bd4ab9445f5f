// BoxValues: a boxes or per_box member's numbers, from JSON or .npy.
#include "workers/box_values.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <opencv2/core/cvdef.h>
#include <nlohmann/json.hpp>

#include "base/json_text.h"
#include "base/printable.h"
#include "formats/npy_header.h"

namespace forkfeed {
namespace {

// What a value is, for an error: "a string", "an object", ...
std::string_view described(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "a list";
    default: return "a number";
  }
}

// `v` as an error quotes it: a scalar as JSON writes it, a list or an object by its size
// (dump() recurses once a level: a list nested 100,000 deep would overflow the stack).
std::string quoted(const nlohmann::json& v) {
  if (v.is_array()) return "a list of " + std::to_string(v.size());
  if (v.is_object()) return "an object";
  return printable_cut(v.dump());
}

// `v` as a T, or false: for int64, integers in range only (3.0 is 3).
bool number_as(double v, float& out) {
  out = static_cast<float>(v);
  return true;
}
bool number_as(double v, std::int64_t& out) {
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  if (!(v >= -kLimit && v < kLimit) || std::trunc(v) != v) return false;
  out = static_cast<std::int64_t>(v);
  return true;
}
bool json_as(const nlohmann::json& v, float& out) { return v.is_number() && number_as(v.get<double>(), out); }
bool json_as(const nlohmann::json& v, std::int64_t& out) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    out = static_cast<std::int64_t>(u);
    return u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  }
  if (v.is_number_integer()) {
    out = v.get<std::int64_t>();
    return true;
  }
  return v.is_number_float() && number_as(v.get<double>(), out);
}

// Element i of .npy data of `dtype`, as a double (an int64 exactly, when T is one).
template <typename T>
bool npy_element(const std::byte* data, std::size_t i, ElementType dtype, T& out) {
  const auto read = [&]<typename S>(S) {
    S v;
    std::memcpy(&v, data + i * sizeof(S), sizeof(S));
    return v;
  };
  switch (dtype) {
    case ElementType::kBool:
    case ElementType::kUint8: out = static_cast<T>(read(std::uint8_t{})); return true;
    case ElementType::kInt8: out = static_cast<T>(read(std::int8_t{})); return true;
    case ElementType::kInt16: out = static_cast<T>(read(std::int16_t{})); return true;
    case ElementType::kUint16: out = static_cast<T>(read(std::uint16_t{})); return true;
    case ElementType::kInt32: out = static_cast<T>(read(std::int32_t{})); return true;
    case ElementType::kUint32: out = static_cast<T>(read(std::uint32_t{})); return true;
    case ElementType::kInt64: out = static_cast<T>(read(std::int64_t{})); return true;
    case ElementType::kUint64: {
      const auto v = read(std::uint64_t{});
      if constexpr (std::is_same_v<T, std::int64_t>) {
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
      }
      out = static_cast<T>(v);
      return true;
    }
    case ElementType::kFloat16:
      return number_as(static_cast<double>(cv::float16_t::fromBits(read(std::uint16_t{}))), out);
    case ElementType::kFloat32: return number_as(read(float{}), out);
    case ElementType::kFloat64: return number_as(read(double{}), out);
  }
  return false;
}

std::string_view wanted(const std::vector<std::int64_t>&) {
  return "int64 integers (a per_box field of fractions is per_box(key=KEY, dtype=float32))";
}
std::string_view wanted(const std::vector<float>&) { return "numbers"; }

}  // namespace

std::uint64_t box_value_bound(FieldKind kind, ElementType element, bool json, std::uint64_t member_bytes,
                              std::uint64_t samples) {
  const std::uint64_t out = kind == FieldKind::kBoxes ? 16 : element_bytes(element);  // a box's or value's
  const std::uint64_t in = kind == FieldKind::kBoxes ? (json ? 8 : 4) : (json ? 2 : 1);
  // ceil(out / in) a member byte, and a value's worth a sample for the last one's ','.
  return member_bytes * ((out + in - 1) / in) + samples * out;
}

BoxValues::BoxValues() = default;
BoxValues::~BoxValues() = default;

Status BoxValues::read(FileBytes bytes, bool json) {
  json_ = json;
  if (!json) {
    npy_ = bytes;
    return Status::Ok();
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (doc_ == nullptr) doc_ = std::make_unique<nlohmann::json>();
  Result<nlohmann::json> parsed = parse_json_text(text);
  if (!parsed.ok()) return Status::BadData("it is " + parsed.status().message());
  *doc_ = std::move(parsed).value();
  if (!doc_->is_object()) return Status::BadData("it is not a JSON object");
  return Status::Ok();
}

Status BoxValues::rows(std::string_view key, int width, std::vector<float>& out) const {
  return rows_of(key, width, out);
}
Status BoxValues::rows(std::string_view key, int width, std::vector<std::int64_t>& out) const {
  return rows_of(key, width, out);
}

template <typename T>
Status BoxValues::rows_of(std::string_view key, int width, std::vector<T>& out) const {
  out.clear();
  const std::string row = width == 1 ? "a number" : "[" + std::to_string(width) + " numbers]";
  if (json_) {
    const auto it = doc_->find(key);
    if (it == doc_->end()) {
      return Status::BadData("it has no key \"" + printable_cut(key) + "\" (a sample without any writes \"" +
                             printable_cut(key) + "\": [])");
    }
    if (!it->is_array()) {
      return Status::BadData("its key \"" + printable_cut(key) + "\" is " + std::string(described(*it)) +
                             ", not a list of " + row);
    }
    const auto take = [&](const nlohmann::json& v) {
      T value{};
      if (!json_as(v, value)) {
        return Status::BadData("its key \"" + printable_cut(key) + "\" holds " + quoted(v) + ", not one of " +
                               std::string(wanted(out)));
      }
      out.push_back(value);
      return Status::Ok();
    };
    const bool nested = !it->empty() && it->front().is_array();
    for (const nlohmann::json& item : *it) {
      if (nested != item.is_array() || (nested && item.size() != static_cast<std::size_t>(width))) {
        return Status::BadData("its key \"" + printable_cut(key) + "\" holds " + quoted(item) + ", not " +
                               row + (nested ? "" : " or a number"));
      }
      if (!nested) {
        if (Status s = take(item); !s.ok()) return s;
        continue;
      }
      for (const nlohmann::json& v : item) {
        if (Status s = take(v); !s.ok()) return s;
      }
    }
    if (out.size() % static_cast<std::size_t>(width) != 0) {
      return Status::BadData("its key \"" + printable_cut(key) + "\" holds " + std::to_string(out.size()) +
                             " numbers, not rows of " + std::to_string(width));
    }
    return Status::Ok();
  }
  const std::string_view member(reinterpret_cast<const char*>(npy_.data()), npy_.size());
  auto header = parse_npy_header(member, member.size());
  if (!header.ok()) return header.status();
  const std::vector<std::int64_t>& shape = header->shape;
  const bool fits = width == 1 ? shape.size() == 1 || (shape.size() == 2 && shape[1] == 1)
                               : shape.size() == 2 && shape[1] == width;
  if (!fits) {
    return Status::BadData("its .npy has shape " + npy_shape_text(shape) + "; write " +
                           (width == 1 ? std::string("(K,)") : "(K, " + std::to_string(width) + ")"));
  }
  const std::byte* data = npy_.data() + header->data_offset;
  out.resize(header->elements());
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!npy_element(data, i, header->dtype, out[i])) {
      return Status::BadData("its .npy of " + std::string(to_string(header->dtype)) + " holds at element " +
                             std::to_string(i) + " a value that is not one of " + std::string(wanted(out)));
    }
  }
  return Status::Ok();
}

}  // namespace forkfeed
