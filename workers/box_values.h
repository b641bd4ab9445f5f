// BoxValues: the numbers of a sample's boxes and per-box values as its member holds them —
// a list under a key of a .json member ([[x1, y1, x2, y2], ...], or the numbers flat), or
// a .npy ([K, 4] for boxes, [K] for per-box values) of any integer or float dtype — read
// once a sample however many fields take them (a boxes field and the per_box fields that
// share its member). Everything else is bad data that says what it is and what to write.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include "forkfeed/fields.h"
#include "forkfeed/status.h"
#include "workers/image_decoder.h"

namespace forkfeed {

// The most bytes a boxes or per_box field of `kind` and `element` (its values' dtype)
// takes in a slot for members of `member_bytes` (one sample's, or a batch's summed) and
// `samples` samples: the most its numbers grow from their text — a number and its ','
// take 2 characters at least, a box 8 ("0,0,0,0,") and 16 bytes as float32 — or from a
// .npy's narrowest dtype (uint8, bool: a box of 4 bytes, a value of 1). A field's ragged
// region is sized by it.
std::uint64_t box_value_bound(FieldKind kind, ElementType element, bool json, std::uint64_t member_bytes,
                              std::uint64_t samples);

class BoxValues {
 public:
  BoxValues();
  ~BoxValues();
  BoxValues(const BoxValues&) = delete;
  BoxValues& operator=(const BoxValues&) = delete;

  // Reads `bytes`, a .json member (`json`) or a .npy, for the calls below; until the next
  // read(), they take what this one read.
  Status read(FileBytes bytes, bool json);

  // The rows of `width` numbers (4: boxes; 1: per-box values) under `key` of the .json
  // member, or of the .npy (key empty), as float32 (`out` of floats) or as int64 (of
  // int64s: integers only, in range). K rows give K x width values; a list that is not
  // of rows of `width` numbers, or a .npy not of shape [K, width] ([K] when width is 1),
  // is bad data naming what it holds.
  Status rows(std::string_view key, int width, std::vector<float>& out) const;
  Status rows(std::string_view key, int width, std::vector<std::int64_t>& out) const;

 private:
  template <typename T>
  Status rows_of(std::string_view key, int width, std::vector<T>& out) const;

  std::unique_ptr<nlohmann::json> doc_;  // the .json member's, parsed
  FileBytes npy_;                        // or the .npy member's bytes
  bool json_ = false;
};

}  // namespace forkfeed
