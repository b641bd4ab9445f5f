// What the schema's reader (dataset/sample_schema.cpp) and its writer
// (dataset/schema_columns.cpp) say alike of a field.
#pragma once

#include <string>
#include <vector>

#include "forkfeed/fields.h"

namespace forkfeed {

// "jpg;png": sources as an entry writes them.
inline std::string joined_sources(const std::vector<std::string>& sources) {
  std::string text;
  for (const std::string& s : sources) text += (text.empty() ? "" : ";") + s;
  return text;
}

// Whether `f` reads its value while indexing, from a key of a .json member that other
// fields may read too (a label or number field's).
inline bool read_while_indexing(const FieldSpec& f) {
  return (f.kind == FieldKind::kLabel || f.kind == FieldKind::kNumber) && !f.json_key.empty();
}

}  // namespace forkfeed
