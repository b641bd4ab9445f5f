// OpArgs: binding and typed reading of an op call's arguments (transforms/op_args.h).
#include "transforms/op_args.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace forkfeed {
namespace {

std::string lower_last_part(std::string_view word) {
  if (const auto dot = word.rfind('.'); dot != std::string_view::npos) word.remove_prefix(dot + 1);
  std::string out(word);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string range_text(double lo, double hi) {
  auto text = [](double v) {
    if (std::isinf(v)) return std::string(v < 0 ? "-inf" : "inf");
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%g", v);
    return std::string(buffer);
  };
  std::string range = "[";
  range.append(text(lo)).append(", ").append(text(hi)).append("]");
  return range;
}

const char* interpolation_name(fn::Interpolation i) {
  return i == fn::Interpolation::kNearest ? "InterpolationMode.NEAREST" : "InterpolationMode.BILINEAR";
}

}  // namespace

OpArgs::OpArgs(const OpCall& call, const std::vector<std::string_view>& params) : op_(call.name) {
  auto list = [&] {
    std::string text;
    for (std::string_view p : params) text.append(text.empty() ? "" : ", ").append(p);
    return text.empty() ? std::string("none") : text;
  };
  if (call.positional.size() > params.size()) {
    status_ = Status::InvalidArgument("transform: " + op_ + " takes at most " +
                                      std::to_string(params.size()) + " arguments (" + list() + "), got " +
                                      std::to_string(call.positional.size()) + " in " + call.text);
    return;
  }
  for (std::size_t i = 0; i < call.positional.size(); ++i)
    bound_.emplace_back(params[i], &call.positional[i]);
  for (const auto& [name, value] : call.keywords) {
    if (std::find(params.begin(), params.end(), name) == params.end()) {
      status_ = Status::InvalidArgument("transform: " + op_ + " has no argument '" + name +
                                        "' (its arguments: " + list() + ") in " + call.text);
      return;
    }
    if (find(name) != nullptr) {
      status_ = Status::InvalidArgument("transform: " + op_ + " got '" + name + "' twice in " + call.text);
      return;
    }
    bound_.emplace_back(name, &value);
  }
}

const SpecValue* OpArgs::find(std::string_view name) const {
  for (const auto& [n, v] : bound_) {
    if (n == name) return v;
  }
  return nullptr;
}

bool OpArgs::present(std::string_view name) const {
  const SpecValue* v = find(name);
  return v != nullptr && v->kind != SpecValue::Kind::kNone;
}

bool OpArgs::is_word(std::string_view name) const {
  const SpecValue* v = find(name);
  return v != nullptr && v->kind == SpecValue::Kind::kWord;
}

bool OpArgs::is_float(std::string_view name) const {
  const SpecValue* v = find(name);
  return v != nullptr && v->kind == SpecValue::Kind::kNumber && !v->integer;
}

void OpArgs::bad(std::string_view name, const SpecValue& value, const std::string& what) {
  if (status_.ok()) {
    status_ = Status::InvalidArgument("transform: " + op_ + "'s " + std::string(name) + " must be " + what +
                                      ", got " + value.text);
  }
}

void OpArgs::fail(std::string_view name, const std::string& what) {
  if (status_.ok())
    status_ = Status::InvalidArgument("transform: " + op_ + "'s " + std::string(name) + " " + what);
}

void OpArgs::require(std::string_view name) {
  if (!given(name) && status_.ok()) {
    status_ =
        Status::InvalidArgument("transform: " + op_ + " needs its argument '" + std::string(name) + "'");
  }
}

double OpArgs::number(std::string_view name, double fallback, double lo, double hi) {
  const SpecValue* v = find(name);
  if (v == nullptr || v->kind == SpecValue::Kind::kNone) return fallback;
  if (v->kind != SpecValue::Kind::kNumber || v->number < lo || v->number > hi) {
    bad(name, *v, "a number in " + range_text(lo, hi));
    return fallback;
  }
  return v->number;
}

int OpArgs::integer(std::string_view name, int fallback, int lo, int hi) {
  const SpecValue* v = find(name);
  if (v == nullptr || v->kind == SpecValue::Kind::kNone) return fallback;
  if (v->kind != SpecValue::Kind::kNumber || v->number != std::floor(v->number) || v->number < lo ||
      v->number > hi) {
    bad(name, *v, "an integer in " + range_text(lo, hi));
    return fallback;
  }
  return static_cast<int>(v->number);
}

bool OpArgs::flag(std::string_view name, bool fallback) {
  const SpecValue* v = find(name);
  if (v == nullptr) return fallback;
  if (v->kind != SpecValue::Kind::kBool) {
    bad(name, *v, "True or False");
    return fallback;
  }
  return v->number != 0;
}

std::optional<std::vector<double>> OpArgs::numbers(std::string_view name, std::size_t min_arity,
                                                   std::size_t max_arity, double lo, double hi) {
  const SpecValue* v = find(name);
  if (v == nullptr || v->kind == SpecValue::Kind::kNone) return std::nullopt;
  std::vector<double> out;
  if (v->kind == SpecValue::Kind::kNumber) {
    out = {v->number};
  } else if (v->kind == SpecValue::Kind::kTuple) {
    out = v->tuple;
  }
  const bool arity =
      v->kind == SpecValue::Kind::kNumber || (min_arity <= out.size() && out.size() <= max_arity);
  const bool fits = !out.empty() && arity &&
                    std::all_of(out.begin(), out.end(), [&](double x) { return lo <= x && x <= hi; });
  if (!fits) {
    const std::string count = min_arity == max_arity
                                  ? std::to_string(max_arity)
                                  : std::to_string(min_arity) + " to " + std::to_string(max_arity);
    bad(name, *v, "a number or a tuple of " + count + " numbers, each in " + range_text(lo, hi));
    return std::nullopt;
  }
  return out;
}

std::optional<std::array<int, 2>> OpArgs::size(std::string_view name) {
  const SpecValue* v = find(name);
  if (v == nullptr || v->kind == SpecValue::Kind::kNone) return std::nullopt;
  std::vector<double> sides;
  if (v->kind == SpecValue::Kind::kNumber) sides = {v->number};
  if (v->kind == SpecValue::Kind::kTuple) sides = v->tuple;
  const bool fits = (sides.size() == 1 || sides.size() == 2) &&
                    std::all_of(sides.begin(), sides.end(),
                                [](double s) { return s == std::floor(s) && s >= 1 && s <= 65536; });
  if (!fits) {
    bad(name, *v, "a size in pixels: an integer, or (height, width)");
    return std::nullopt;
  }
  const int h = static_cast<int>(sides[0]);
  return std::array<int, 2>{h, sides.size() == 2 ? static_cast<int>(sides[1]) : h};
}

fn::Interpolation OpArgs::interpolation(std::string_view name, fn::Interpolation fallback,
                                        std::initializer_list<fn::Interpolation> supported) {
  const SpecValue* v = find(name);
  if (v == nullptr) return fallback;
  std::optional<fn::Interpolation> got;
  // torchvision also takes PIL's integer codes: 0 nearest, 2 bilinear.
  if (v->kind == SpecValue::Kind::kWord) {
    const std::string w = lower_last_part(v->word);
    if (w == "nearest") got = fn::Interpolation::kNearest;
    if (w == "bilinear") got = fn::Interpolation::kBilinear;
  } else if (v->kind == SpecValue::Kind::kNumber) {
    if (v->number == 0) got = fn::Interpolation::kNearest;
    if (v->number == 2) got = fn::Interpolation::kBilinear;
  }
  if (!got || std::find(supported.begin(), supported.end(), *got) == supported.end()) {
    std::string names;
    for (fn::Interpolation i : supported)
      names.append(names.empty() ? "" : " or ").append(interpolation_name(i));
    bad(name, *v, names + " (forkfeed implements these for " + op_ + ")");
    return fallback;
  }
  return *got;
}

fn::Fill OpArgs::fill(std::string_view name) {
  const SpecValue* v = find(name);
  if (v == nullptr || v->kind == SpecValue::Kind::kNone) return {0, 0, 0};
  if (v->kind == SpecValue::Kind::kNumber && v->number >= 0 && v->number <= 255) {
    const auto f = static_cast<float>(v->number);
    return {f, f, f};
  }
  if (v->kind == SpecValue::Kind::kTuple && (v->tuple.size() == 3 || v->tuple.size() == 1) &&
      std::all_of(v->tuple.begin(), v->tuple.end(), [](double x) { return 0 <= x && x <= 255; })) {
    const std::vector<double>& t = v->tuple;
    return {static_cast<float>(t[0]), static_cast<float>(t[t.size() == 3 ? 1 : 0]),
            static_cast<float>(t[t.size() == 3 ? 2 : 0])};
  }
  bad(name, *v, "None, a level in [0, 255] or three of them (R, G, B)");
  return {0, 0, 0};
}

std::string OpArgs::word(std::string_view name, std::string_view fallback,
                         std::initializer_list<std::string_view> choices, std::string_view what) {
  const SpecValue* v = find(name);
  if (v == nullptr) return std::string(fallback);
  const std::string w = v->kind == SpecValue::Kind::kWord ? lower_last_part(v->word) : std::string();
  for (std::string_view c : choices) {
    if (w == c) return w;
  }
  std::string names;
  for (std::string_view c : choices) names.append(names.empty() ? "'" : ", '").append(c).append("'");
  bad(name, *v, what.empty() ? "one of " + names : std::string(what));
  return std::string(fallback);
}

}  // namespace forkfeed
