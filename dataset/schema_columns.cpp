// A parsed schema's canonical text (fields_text, forkfeed/fields.h), where an index keeps
// each field (field_columns), and the SampleSchema of both (dataset/sample_schema.h).
#include <string>
#include <vector>

#include "base/option_names.h"
#include "base/printable.h"
#include "dataset/sample_schema.h"
#include "dataset/schema_rules.h"

namespace forkfeed {
namespace {

// "(KEY)" of a label or number field, "(key=K, format=F, ...)" of the kinds that take named
// arguments, each that is not its default; "" when there are none.
std::string arguments_text(const FieldSpec& f) {
  if (read_while_indexing(f)) {
    std::string key = "(";  // piece by piece: "(" + key + ")" makes GCC 12 warn falsely (-Wrestrict)
    key += f.json_key;
    key += ')';
    return key;
  }
  std::vector<std::string> arguments;
  if (!f.json_key.empty()) arguments.push_back("key=" + f.json_key);
  if (f.box_format != BoxFormat::kXyxy) arguments.push_back("format=" + std::string(to_string(f.box_format)));
  if (f.normalized) arguments.emplace_back("normalized=true");
  if (f.fill != 0) arguments.push_back("fill=" + std::to_string(f.fill));
  if (f.element == ElementType::kUint16 || (f.kind == FieldKind::kPerBox && f.element != ElementType::kInt64))
    arguments.push_back("dtype=" + std::string(to_string(f.element)));
  std::string text;
  for (const std::string& a : arguments) text += (text.empty() ? "(" : ", ") + a;
  return text.empty() ? text : text + ")";
}

}  // namespace

std::string fields_text(const std::vector<FieldSpec>& fields) {
  std::string text;
  for (const FieldSpec& f : fields) {
    if (!text.empty()) text += ", ";
    text += f.name;
    text += '=';
    text += joined_sources(f.sources);
    if (!f.json_key.empty() || f.kind != default_kind(f.sources.front())) {
      text += ':';
      text += to_string(f.kind);
      text += arguments_text(f);
    }
  }
  return text;
}

FieldColumns field_columns(const std::vector<FieldSpec>& fields) {
  FieldColumns out;
  out.of.resize(fields.size());
  for (std::size_t f = 0; f < fields.size(); ++f) {
    FieldColumn& c = out.of[f];
    switch (fields[f].kind) {
      case FieldKind::kLabel: c = {FieldColumn::Store::kLabel, out.labels++}; break;
      case FieldKind::kNumber: c = {FieldColumn::Store::kNumber, out.numbers++}; break;
      case FieldKind::kImage:
      case FieldKind::kText:
      case FieldKind::kBytes:
      case FieldKind::kArray:
      case FieldKind::kMask:
      case FieldKind::kBoxes:
      case FieldKind::kPerBox: {
        const auto viewed = std::find_if(fields.begin(), fields.begin() + static_cast<std::ptrdiff_t>(f),
                                         [&](const FieldSpec& e) { return e.name == fields[f].member_of; });
        c = viewed != fields.begin() + static_cast<std::ptrdiff_t>(f)
                ? out.of[static_cast<std::size_t>(viewed - fields.begin())]
                : FieldColumn{FieldColumn::Store::kMember, out.members++};
        break;
      }
    }
  }
  return out;
}

Result<SampleSchema> sample_schema(std::string_view text, MissingField missing) {
  if (text.empty()) return sample_schema(std::vector<FieldSpec>{}, missing);
  auto fields = parse_fields(text);
  if (!fields.ok()) return fields.status();
  return sample_schema(std::move(fields).value(), missing);
}

Result<SampleSchema> sample_schema(std::vector<FieldSpec> fields, MissingField missing) {
  SampleSchema schema;
  schema.missing = missing;
  if (fields.empty()) return schema;
  schema.fields = std::move(fields);
  schema.columns = field_columns(schema.fields);
  schema.text = fields_text(schema.fields);
  if (schema.columns.members == 0) {
    return Status::InvalidArgument("fields \"" + printable_cut(schema.text) +
                                   "\" has no field read from a member (image, text, bytes, array, mask, "
                                   "boxes or per_box); a sample needs one, e.g. "
                                   "\"image=jpg;png\"");
  }
  return schema;
}

}  // namespace forkfeed
