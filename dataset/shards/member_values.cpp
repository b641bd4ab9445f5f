// What the fields of a shard's samples read from their members (dataset/shards/member_values.h).
#include "dataset/shards/member_values.h"

#include <algorithm>

#include "base/json_text.h"
#include "base/printable.h"
#include "formats/label_text.h"

namespace forkfeed {
namespace {

// Bytes of an array member read first for its .npy header: a plain dtype's takes 128.
constexpr std::uint64_t kNpyFirstRead = 4096;

}  // namespace

MemberValues::Value MemberValues::value(const FieldSpec& field, const TarMember& m) {
  Value out;
  const std::string named = "member " + printable_cut(m.name);
  if (m.size > kMaxLabelBytes) {
    out.problem = named + " is " + std::to_string(m.size) + " bytes > " + std::to_string(kMaxLabelBytes) +
                  " (a " + std::string(to_string(field.kind)) + " member holds a number)";
    return out;
  }
  const bool label = field.kind == FieldKind::kLabel;
  const std::string_view rule = label ? kLabelRule : std::string_view("a finite number");
  if (field.json_key.empty()) {
    Result<std::string> bytes = read_member_(m);
    if (!bytes.ok()) {
      out.shard_error = bytes.status();
    } else if (label) {
      out.label = parse_label(*bytes);
    } else {
      out.number = parse_number(*bytes);
    }
    if (!out.label && !out.number && out.shard_error.ok())
      out.problem = named + " is not " + std::string(rule) + ": " + label_excerpt(*bytes);
    return out;
  }
  const Result<nlohmann::json>* parsed = json_of(m, out.shard_error);
  if (parsed == nullptr) return out;
  if (!parsed->ok() || !(*parsed)->is_object()) {
    out.problem = named + " is " + (parsed->ok() ? "not a JSON object" : parsed->status().message());
    return out;
  }
  const nlohmann::json* doc = &parsed->value();
  const auto it = doc->find(field.json_key);
  if (it == doc->end()) return out;  // the sample lacks the field
  if (label) {
    out.label = json_label(*it);
  } else {
    out.number = json_number(*it);
  }
  if (!out.label && !out.number) {
    out.problem = named + "'s key \"" + printable(field.json_key) + "\" is not " + std::string(rule) + ": " +
                  label_excerpt(it->dump());
  }
  return out;
}

const Result<nlohmann::json>* MemberValues::json_of(const TarMember& m, Status& error) {
  for (const auto& [member, doc] : json_read_) {
    if (member == &m) return &doc;
  }
  Result<std::string> bytes = read_member_(m);
  if (!bytes.ok()) {
    error = bytes.status();
    return nullptr;
  }
  json_read_.emplace_back(&m, parse_json_text(*bytes));
  return &json_read_.back().second;
}

Result<NpyHeader> MemberValues::npy_header(const TarMember& m, Status& error) {
  TarMember start = m;
  start.size = std::min(m.size, kNpyFirstRead);
  Result<std::string> bytes = read_member_(start);
  if (bytes.ok()) {
    const Result<std::uint64_t> needs = npy_header_bytes(*bytes);
    if (needs.ok() && *needs > bytes->size() && *needs <= m.size) {
      start.size = *needs;
      bytes = read_member_(start);
    }
  }
  if (!bytes.ok()) {
    error = bytes.status();
    return Status::Cancelled("");
  }
  return parse_npy_header(*bytes, m.size);
}

}  // namespace forkfeed
