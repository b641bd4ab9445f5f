// The names of LoaderOptions' enums, one table per enum. parse_* and to_string
// (forkfeed/options.h, forkfeed/fields.h) read these tables, and so does every flag, help text and error
// message that lists the choices: a value is named in one place.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/fields.h"
#include "forkfeed/options.h"

namespace forkfeed {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// kEnumNames<E>: every value of E with its name, in the order help texts list them.
template <typename E>
inline constexpr std::array<EnumName<E>, 0> kEnumNames{};
template <>
inline constexpr std::array<EnumName<DType>, 2> kEnumNames<DType>{
    {{DType::kUint8, "uint8"}, {DType::kFloat32, "float32"}}};
template <>
inline constexpr std::array<EnumName<OnError>, 2> kEnumNames<OnError>{
    {{OnError::kFail, "fail"}, {OnError::kSkip, "skip"}}};
template <>
inline constexpr std::array<EnumName<StartMethod>, 3> kEnumNames<StartMethod>{
    {{StartMethod::kFork, "fork"}, {StartMethod::kSpawn, "spawn"}, {StartMethod::kAuto, "auto"}}};
template <>
inline constexpr std::array<EnumName<ForkHazardPolicy>, 3> kEnumNames<ForkHazardPolicy>{
    {{ForkHazardPolicy::kWarn, "warn"},
     {ForkHazardPolicy::kError, "error"},
     {ForkHazardPolicy::kIgnore, "ignore"}}};

template <>
inline constexpr std::array<EnumName<ShardLabel>, 3> kEnumNames<ShardLabel>{
    {{ShardLabel::kCls, "cls"}, {ShardLabel::kJson, "json"}, {ShardLabel::kClassFolder, "class_folder"}}};

template <>
inline constexpr std::array<EnumName<Layout>, 3> kEnumNames<Layout>{
    {{Layout::kAuto, "auto"}, {Layout::kNhwc, "nhwc"}, {Layout::kNchw, "nchw"}}};

template <>
inline constexpr std::array<EnumName<ContentCheck>, 2> kEnumNames<ContentCheck>{
    {{ContentCheck::kWindows, "windows"}, {ContentCheck::kFull, "full"}}};

template <>
inline constexpr std::array<EnumName<MissingField>, 3> kEnumNames<MissingField>{
    {{MissingField::kError, "error"}, {MissingField::kSkip, "skip"}, {MissingField::kEmpty, "empty"}}};

template <>
inline constexpr std::array<EnumName<FieldKind>, 9> kEnumNames<FieldKind>{{{FieldKind::kImage, "image"},
                                                                           {FieldKind::kLabel, "label"},
                                                                           {FieldKind::kText, "text"},
                                                                           {FieldKind::kBytes, "bytes"},
                                                                           {FieldKind::kArray, "array"},
                                                                           {FieldKind::kNumber, "number"},
                                                                           {FieldKind::kMask, "mask"},
                                                                           {FieldKind::kBoxes, "boxes"},
                                                                           {FieldKind::kPerBox, "per_box"}}};
template <>
inline constexpr std::array<EnumName<BoxFormat>, 3> kEnumNames<BoxFormat>{
    {{BoxFormat::kXyxy, "xyxy"}, {BoxFormat::kXywh, "xywh"}, {BoxFormat::kCxcywh, "cxcywh"}}};

// The value of E named `name`, or nullopt.
template <typename E>
constexpr std::optional<E> parse_enum(std::string_view name) {
  for (const EnumName<E>& e : kEnumNames<E>) {
    if (e.name == name) return e.value;
  }
  return std::nullopt;
}

// The name of `value`; empty for a value outside the enum.
template <typename E>
constexpr std::string_view enum_name(E value) {
  for (const EnumName<E>& e : kEnumNames<E>) {
    if (e.value == value) return e.name;
  }
  return {};
}

// The names of E, for CLI11's IsMember and for listing the choices.
template <typename E>
std::vector<std::string> enum_names() {
  std::vector<std::string> names;
  for (const EnumName<E>& e : kEnumNames<E>) names.emplace_back(e.name);
  return names;
}

// "fork, spawn or auto": the choices in a sentence.
template <typename E>
std::string enum_names_or() {
  std::string text;
  for (std::size_t i = 0; i < kEnumNames<E>.size(); ++i) {
    if (i > 0) text += i + 1 == kEnumNames<E>.size() ? " or " : ", ";
    text += kEnumNames<E>[i].name;
  }
  return text;
}

}  // namespace forkfeed
