// The text of a transform pipeline, read into calls: "RandomResizedCrop(224,
// scale=(0.08, 1)), RandomHorizontalFlip(), Normalize()" is three OpCalls. Syntax only,
// as a Python reader of torchvision's spelling would see it: names, numbers, tuples and
// lists, strings, None/True/False and dotted names (InterpolationMode.BILINEAR). What
// the calls mean — which ops exist, their arguments — is transforms/op_table.cpp's business.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forkfeed/status.h"

namespace forkfeed {

// One argument as written.
struct SpecValue {
  enum class Kind { kNumber, kTuple, kWord, kNone, kBool };
  Kind kind = Kind::kNone;
  double number = 0;          // kNumber; kBool: 0 or 1
  bool integer = false;       // kNumber written as Python writes an int (100, not 100.0 or 1e2)
  std::vector<double> tuple;  // kTuple: (a, b, ...) or [a, b, ...] of numbers
  std::string word;           // kWord: a string's contents or a (dotted) name
  std::string text;           // as written, for error messages
};

struct OpCall {
  std::string name;
  std::vector<SpecValue> positional;
  std::vector<std::pair<std::string, SpecValue>> keywords;
  std::string text;  // the whole call as written
};

// The calls of `text`, in order; an error names the position and what was expected.
Result<std::vector<OpCall>> parse_calls(std::string_view text);

}  // namespace forkfeed
