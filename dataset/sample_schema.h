// A sample schema as the dataset room reads it: the fields of forkfeed/fields.h parsed
// once, where an index keeps each of them (FieldColumns, one rule for the shard scan,
// the index cache and the DatasetIndex), and the canonical text that the cache and the
// dataset's identity key on.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/dataset.h"
#include "forkfeed/fields.h"
#include "forkfeed/status.h"

namespace forkfeed {

// The kind a field takes from its first source when it names none, by the source's last
// dot-component: an image extension (kImageExtensions) -> image, cls -> label, txt ->
// text, npy -> array, anything else -> bytes ("seg.png" is an image, "meta.json" bytes).
FieldKind default_kind(std::string_view source);
// Whether members of `source` are JSON: its last dot-component is "json".
bool is_json_source(std::string_view source);

// Where an index keeps each of `fields`, in order: the member fields (image, text, bytes,
// array) each a member column, the first the sample's own slice; a view the column of the
// image it views; label fields an int64 column, the first one the index's labels; number
// fields a float64 column.
FieldColumns field_columns(const std::vector<FieldSpec>& fields);

struct SampleSchema {
  std::vector<FieldSpec> fields;  // empty: no fields, a sample is an image and a label
  MissingField missing = MissingField::kError;
  FieldColumns columns;  // field_columns(fields)
  std::string text;      // fields_text(fields); "" without fields
  bool empty() const { return fields.empty(); }
};

// The schema of LoaderOptions::fields and ::missing: "" is no fields; any other text is
// parse_fields'. Refuses a schema with no member field: a sample needs a member to read.
Result<SampleSchema> sample_schema(std::string_view fields, MissingField missing);
// The schema of `fields` as parse_fields read them (none: no fields).
Result<SampleSchema> sample_schema(std::vector<FieldSpec> fields, MissingField missing);

}  // namespace forkfeed
