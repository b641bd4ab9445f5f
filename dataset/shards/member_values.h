// What the fields of one shard's samples read from their members while the shard is
// grouped: a label or number field's value (from a .cls-like member's text or a key of a
// .json member, each JSON member parsed once a sample however many fields read it), and an
// array field's .npy header. Grouping (dataset/shards/shard_samples.cpp) decides which
// member a field takes; this reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dataset/shards/shard_samples.h"
#include "forkfeed/fields.h"
#include "forkfeed/status.h"
#include "formats/npy_header.h"
#include "formats/tar_member.h"

namespace forkfeed {

class MemberValues {
 public:
  // Reads through `read_member`, which must outlive this.
  explicit MemberValues(const ReadMember& read_member) : read_member_(read_member) {}

  // Forgets the JSON members parsed for the last sample.
  void next_sample() { json_read_.clear(); }

  // What a label or number field reads from its member: the value (neither: a keyed
  // field's member has no such key, and the sample lacks the field), or the sample's
  // problem; `shard_error` is set instead when the member cannot be read.
  struct Value {
    std::optional<double> number;
    std::optional<std::int64_t> label;
    std::string problem;
    Status shard_error;
  };
  Value value(const FieldSpec& field, const TarMember& m);

  // The .npy header of array member `m`: read from its first bytes (its header's, when
  // longer); `error` set instead when the member cannot be read.
  Result<NpyHeader> npy_header(const TarMember& m, Status& error);

 private:
  // Member `m` parsed as JSON (or why it is none), once a sample; null (`error` set) when
  // it cannot be read.
  const Result<nlohmann::json>* json_of(const TarMember& m, Status& error);

  const ReadMember& read_member_;
  std::vector<std::pair<const TarMember*, Result<nlohmann::json>>> json_read_;  // this sample's, parsed
};

}  // namespace forkfeed
