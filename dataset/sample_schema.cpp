// parse_fields (forkfeed/fields.h): the text of a sample schema, read entry by entry, each
// error naming the entry and what to write instead. Its canonical text and where an index
// keeps each field: dataset/schema_columns.cpp.
#include "dataset/sample_schema.h"

#include <algorithm>
#include <optional>
#include <set>

#include "base/option_names.h"
#include "base/printable.h"
#include "dataset/image_extensions.h"
#include "dataset/schema_rules.h"

namespace forkfeed {
namespace {

constexpr std::string_view kSpace = " \t\n\r\f\v";
constexpr std::string_view kExample = "\"image=jpg;png, caption=txt, label=cls\"";

std::string_view trim(std::string_view s) {
  const std::size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

bool is_name(std::string_view name) {
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  return !name.empty() && letter(name[0]) && std::all_of(name.begin() + 1, name.end(), [&](char c) {
    return letter(c) || (c >= '0' && c <= '9');
  });
}

std::string_view last_component(std::string_view source) { return source.substr(source.rfind('.') + 1); }

// One entry of the text, read into a FieldSpec (member_of is the schema's to set).
class EntryReader {
 public:
  EntryReader(std::size_t number, std::string_view entry) : number_(number), entry_(entry) {}

  Result<FieldSpec> read() const {
    const std::size_t eq = entry_.find('=');
    if (eq == std::string_view::npos)
      return bad("has no '='; write NAME=SOURCES, e.g. \"image=jpg;png\" or \"caption=txt\"");
    FieldSpec spec;
    spec.name = std::string(trim(entry_.substr(0, eq)));
    if (Status s = check_name(spec.name); !s.ok()) return s;
    std::string_view rest = entry_.substr(eq + 1);
    const std::size_t colon = rest.find(':');
    if (Status s = read_sources(trim(rest.substr(0, colon)), spec.sources); !s.ok()) return s;
    spec.kind = default_kind(spec.sources.front());
    std::string_view arguments;  // what the kind's parentheses hold
    if (colon != std::string_view::npos) {
      if (Status s = read_kind(trim(rest.substr(colon + 1)), spec, arguments); !s.ok()) return s;
    }
    if (spec.kind == FieldKind::kPerBox) spec.element = ElementType::kInt64;
    const bool named_arguments =
        spec.kind == FieldKind::kMask || spec.kind == FieldKind::kBoxes || spec.kind == FieldKind::kPerBox;
    if (named_arguments && !arguments.empty()) {
      if (Status s = read_arguments(arguments, spec); !s.ok()) return s;
    } else {
      spec.json_key = std::string(arguments);  // a key, which check_key weighs against the kind
    }
    if (Status s = check_key(spec); !s.ok()) return s;
    return spec;
  }

  // "fields entry 2 ("caption=txt:str")", as every error begins.
  std::string named() const {
    return "fields entry " + std::to_string(number_) + " (\"" + printable_cut(trim(entry_)) + "\")";
  }
  Status bad(const std::string& why) const { return Status::InvalidArgument(named() + " " + why); }

 private:
  Status check_name(std::string_view name) const {
    if (name.empty()) return bad("has no name before '='; write NAME=SOURCES, e.g. \"image=jpg\"");
    if (name.starts_with("__")) {  // "__key__", "__present__", and what WebDataset names so
      return bad("is named \"" + printable_cut(name) +
                 "\": names beginning with \"__\" are forkfeed's (\"__key__\" holds the samples' keys, "
                 "\"__present__\" which fields each sample had); give the field another name");
    }
    if (!is_name(name)) {
      return bad("has the name \"" + printable_cut(name) +
                 "\"; a name is letters, digits and '_', not starting with a digit (e.g. \"image\", "
                 "\"caption_2\")");
    }
    return Status::Ok();
  }

  Status read_sources(std::string_view text, std::vector<std::string>& out) const {
    if (text.empty()) {
      return bad("has no source after '='; write the member extensions it takes, e.g. \"image=jpg;png\"");
    }
    for (std::size_t start = 0;;) {
      const std::size_t semi = text.find(';', start);
      std::string source(trim(text.substr(start, semi == std::string_view::npos ? semi : semi - start)));
      std::transform(source.begin(), source.end(), source.begin(), ascii_lower);
      if (Status s = check_source(source); !s.ok()) return s;
      if (std::find(out.begin(), out.end(), source) != out.end())
        return bad("names the source \"" + source + "\" twice; write it once");
      out.push_back(std::move(source));
      if (semi == std::string_view::npos) break;
      start = semi + 1;
    }
    return Status::Ok();
  }

  Status check_source(std::string_view source) const {
    if (source.empty()) return bad("has an empty source (two ';' in a row, or one at an end); remove it");
    if (source.front() == '.') {
      const std::string_view bare = source.substr(std::min(source.find_first_not_of('.'), source.size()));
      return bad("has the source \"" + printable_cut(source) +
                 "\"; write extensions without their leading '.': \"" + printable_cut(bare) + "\"");
    }
    if (source.back() == '.' || source.find("..") != std::string_view::npos)
      return bad("has the source \"" + printable_cut(source) + "\", with an empty part between dots");
    const std::size_t odd = source.find_first_of(" \t\n\r\f\v/()=,:;");
    if (odd != std::string_view::npos) {
      return bad(
          "has the source \"" + printable_cut(source) + "\", which holds '" +
          printable(source.substr(odd, 1)) +
          "'; a source is a member's extension, the part of its name after the key's first '.' (\"jpg\", "
          "\"seg.png\")");
    }
    return Status::Ok();
  }

  Status read_kind(std::string_view text, FieldSpec& spec, std::string_view& arguments) const {
    const std::string_view kind = trim(text.substr(0, text.find('(')));
    const std::optional<FieldKind> parsed = parse_field_kind(kind);
    const std::string forms = forms_of(parsed.value_or(FieldKind::kLabel), spec);
    const std::size_t open = text.find('(');
    if (open != std::string_view::npos) {
      if (!text.ends_with(')') || text.find(')') != text.size() - 1) {
        return bad("has \"" + printable_cut(text) + "\" after ':'; " + forms);
      }
      arguments = trim(text.substr(open + 1, text.size() - open - 2));
      if (arguments.empty()) {
        return bad(parsed == FieldKind::kLabel || parsed == FieldKind::kNumber || !parsed
                       ? "has an empty key in (); write the JSON key whose value it is, e.g. "
                         "\"label=json:label(class_id)\""
                       : "has nothing in (); " + forms);
      }
    } else if (text.find(')') != std::string_view::npos) {
      return bad("has \"" + printable_cut(text) + "\" after ':'; " + forms);
    }
    if (!parsed) {
      return bad(kind.empty()
                     ? std::string("has no kind after ':'; write one of ") + enum_names_or<FieldKind>()
                     : "has the kind \"" + printable_cut(kind) + "\"; use " + enum_names_or<FieldKind>());
    }
    spec.kind = *parsed;
    return Status::Ok();
  }

  // What to write for a field of `kind`, with an example.
  static std::string forms_of(FieldKind kind, const FieldSpec& spec) {
    switch (kind) {
      case FieldKind::kMask:
        return "write \"mask\", \"mask(fill=N)\", \"mask(dtype=uint16)\" or both, N the class id of pixels "
               "moved in from outside the image (0 to 255, or 65535 for uint16), e.g. \"" +
               spec.name + "=" + spec.sources.front() + ":mask(fill=255)\"";
      case FieldKind::kBoxes:
        return "write \"boxes(key=KEY, format=F, normalized=B)\" for a .json member, F one of " +
               enum_names_or<BoxFormat>() +
               " (default xyxy), B true when the numbers are fractions of the image's size (default false), "
               "or \"boxes(format=F)\" for a [K, 4] .npy; e.g. \"" +
               spec.name + "=json:boxes(key=bbox, format=xywh)\"";
      case FieldKind::kPerBox:
        return "write \"per_box(key=KEY)\" for a .json member's list, \"per_box\" for a 1-D .npy, and "
               "dtype=float32 for values that are not integers, e.g. \"" +
               spec.name + "=json:per_box(key=labels)\"";
      default: return "write KIND or KIND(KEY), e.g. \"label=json:label(class_id)\"";
    }
  }

  // The "name=value, ..." arguments of a mask, boxes or per_box field: each once, each
  // one the kind takes, each value one it allows.
  Status read_arguments(std::string_view text, FieldSpec& spec) const {
    const auto refuse = [&] {
      return bad("has \"" + std::string(to_string(spec.kind)) + "(" + printable_cut(text) + ")\"; " +
                 forms_of(spec.kind, spec));
    };
    std::vector<std::string_view> seen;
    for (std::size_t start = 0; start <= text.size();) {
      const std::size_t comma = std::min(text.find(',', start), text.size());
      const std::string_view argument = trim(text.substr(start, comma - start));
      start = comma + 1;
      const std::size_t eq = argument.find('=');
      if (eq == std::string_view::npos) return refuse();
      const std::string_view key = trim(argument.substr(0, eq)), value = trim(argument.substr(eq + 1));
      if (std::find(seen.begin(), seen.end(), key) != seen.end() || value.empty()) return refuse();
      seen.push_back(key);
      if (!read_argument(key, value, spec)) return refuse();
    }
    if (spec.kind == FieldKind::kMask) {  // the fill a value of the dtype
      const long most = spec.element == ElementType::kUint16 ? 65535 : 255;
      if (spec.fill > most) return refuse();
    }
    return Status::Ok();
  }

  // Sets `key`'s `value` on `spec`; false when its kind takes no such argument or value.
  static bool read_argument(std::string_view key, std::string_view value, FieldSpec& spec) {
    const FieldKind kind = spec.kind;
    if (key == "key" && kind != FieldKind::kMask && value.find('\0') == std::string_view::npos) {
      spec.json_key = std::string(value);
      return true;
    }
    if (key == "dtype" && kind == FieldKind::kMask && (value == "uint8" || value == "uint16")) {
      spec.element = value == "uint16" ? ElementType::kUint16 : ElementType::kUint8;
      return true;
    }
    if (key == "dtype" && kind == FieldKind::kPerBox && (value == "int64" || value == "float32")) {
      spec.element = value == "float32" ? ElementType::kFloat32 : ElementType::kInt64;
      return true;
    }
    if (key == "fill" && kind == FieldKind::kMask) {
      const bool digits = value.size() <= 5 && std::all_of(value.begin(), value.end(),
                                                           [](char c) { return c >= '0' && c <= '9'; });
      const long fill = digits ? std::stol(std::string(value)) : -1;
      if (fill < 0 || fill > 65535) return false;
      spec.fill = static_cast<std::uint16_t>(fill);
      return true;
    }
    if (key == "format" && kind == FieldKind::kBoxes) {
      const std::optional<BoxFormat> format = parse_enum<BoxFormat>(value);
      if (format) spec.box_format = *format;
      return format.has_value();
    }
    if (key == "normalized" && kind == FieldKind::kBoxes && (value == "true" || value == "false")) {
      spec.normalized = value == "true";
      return true;
    }
    return false;
  }

  // A key reads a value of a .json member: label and number fields (while indexing),
  // boxes and per_box fields (their lists, in a worker), of json sources only, and those
  // need one. Boxes and per_box fields read .json or .npy members, nothing else.
  Status check_key(const FieldSpec& spec) const {
    const bool boxes = spec.kind == FieldKind::kBoxes || spec.kind == FieldKind::kPerBox;
    const bool keyed_kind = spec.kind == FieldKind::kLabel || spec.kind == FieldKind::kNumber || boxes;
    const auto json = std::count_if(spec.sources.begin(), spec.sources.end(), is_json_source);
    const auto npy = std::count_if(spec.sources.begin(), spec.sources.end(),
                                   [](const std::string& s) { return last_component(s) == "npy"; });
    const std::string kind(to_string(spec.kind));
    if (boxes && (json + npy != static_cast<std::ptrdiff_t>(spec.sources.size()) || (json > 0 && npy > 0))) {
      return bad("is a " + kind + " field of sources that are not all .json or all .npy; " +
                 forms_of(spec.kind, spec));
    }
    if (!spec.json_key.empty() && !keyed_kind) {
      return bad("has a key, (" + printable_cut(spec.json_key) + "), but is " + kind +
                 "; only label, number, boxes and per_box fields read a key of a .json member: \"" +
                 spec.name + "=json:label(" + printable_cut(spec.json_key) + ")\", or leave the key out");
    }
    if (!spec.json_key.empty() && json != static_cast<std::ptrdiff_t>(spec.sources.size())) {
      return bad("has a key, (" + printable_cut(spec.json_key) +
                 "), which reads a .json member, but takes sources that are not json; a keyed field reads "
                 ".json members only: \"" +
                 spec.name + "=json:" + kind + (boxes ? "(key=" : "(") + printable_cut(spec.json_key) +
                 ")\"");
    }
    if (boxes && spec.json_key.size() > kMaxBoxKeyBytes) {
      return bad("has a key of " + std::to_string(spec.json_key.size()) + " bytes; a " + kind +
                 " field's key takes at most " + std::to_string(kMaxBoxKeyBytes));
    }
    if (spec.json_key.empty() && keyed_kind && json > 0) {
      return bad("is a " + kind + " read from a .json member, and needs the key whose value it is: \"" +
                 spec.name + "=" + spec.sources.front() + ":" + kind + (boxes ? "(key=KEY)\"" : "(KEY)\""));
    }
    return Status::Ok();
  }

  const std::size_t number_;
  const std::string_view entry_;
};

// Sets member_of on each field that reads an earlier field's member — an image field with
// an earlier image field's sources (a view), a per_box field with its boxes field's or an
// earlier per_box field's — and
// refuses any other member two fields would both take. Fields read while indexing take
// nothing from the member whose key they read: they share it with any field.
Status check_overlaps(std::vector<FieldSpec>& fields, const std::vector<std::string>& entries) {
  const auto shares = [](const FieldSpec& earlier, const FieldSpec& later) {
    return (earlier.kind == FieldKind::kImage && later.kind == FieldKind::kImage) ||
           ((earlier.kind == FieldKind::kBoxes || earlier.kind == FieldKind::kPerBox) &&
            later.kind == FieldKind::kPerBox);
  };
  for (std::size_t b = 0; b < fields.size(); ++b) {
    FieldSpec& later = fields[b];
    if (read_while_indexing(later)) continue;
    const std::set<std::string> sources(later.sources.begin(), later.sources.end());
    for (std::size_t a = 0; a < b; ++a) {
      const FieldSpec& earlier = fields[a];
      if (read_while_indexing(earlier)) continue;
      if (shares(earlier, later) &&
          std::set<std::string>(earlier.sources.begin(), earlier.sources.end()) == sources) {
        if (later.kind == FieldKind::kPerBox && later.json_key.empty()) {
          return Status::InvalidArgument(
              "fields \"" + earlier.name + "\" and \"" + later.name + "\" both take ." +
              later.sources.front() + " members (" + entries[a] + " and " + entries[b] +
              "), but a .npy holds one array: give the per_box values .npy members of their own, e.g. \"" +
              later.name + "=" + later.name + ".npy:per_box\"");
        }
        later.member_of = earlier.member_of.empty() ? earlier.name : earlier.member_of;
        break;
      }
      for (const std::string& s : earlier.sources) {
        if (sources.count(s) == 0) continue;
        const bool images = earlier.kind == FieldKind::kImage && later.kind == FieldKind::kImage;
        const bool boxes = later.kind == FieldKind::kPerBox;
        if (earlier.kind == FieldKind::kPerBox && later.kind == FieldKind::kBoxes) {
          return Status::InvalidArgument("field \"" + earlier.name + "\" (" + entries[a] +
                                         ") is per_box, and takes the member of boxes field \"" + later.name +
                                         "\" (" + entries[b] +
                                         "), which must come first: list the boxes field "
                                         "before its per_box fields");
        }
        return Status::InvalidArgument(
            "fields \"" + earlier.name + "\" and \"" + later.name + "\" both take ." + s + " members (" +
            entries[a] + " and " + entries[b] + "); a member is one field's" +
            (images ? ". Two views of one image are image fields with the same sources: \"" + later.name +
                          "=" + joined_sources(earlier.sources) + "\""
             : boxes ? ". A per_box field shares the member of the boxes or per_box field with the same "
                       "sources: \"" +
                           later.name + "=" + joined_sources(earlier.sources) + ":per_box(key=KEY)\""
                     : ""));
      }
    }
  }
  return Status::Ok();
}

// Where the entry from `start` ends: the first ',' outside parentheses (a kind's arguments,
// "mask(fill=255, dtype=uint16)", hold commas of their own); npos at the text's end.
std::size_t entry_end(std::string_view text, std::size_t start) {
  int depth = 0;
  for (std::size_t i = start; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && depth > 0) --depth;
    if (text[i] == ',' && depth == 0) return i;
  }
  return std::string_view::npos;
}

// Masks and boxes follow the schema's first image field, per_box fields its boxes field:
// there must be one, and one boxes field at most.
Status check_followers(const std::vector<FieldSpec>& fields) {
  const auto first = [&](FieldKind k, std::size_t from = 0) {
    return std::find_if(fields.begin() + static_cast<std::ptrdiff_t>(from), fields.end(),
                        [k](const FieldSpec& f) { return f.kind == k; });
  };
  const auto boxes = first(FieldKind::kBoxes);
  if (boxes != fields.end()) {
    const auto second = first(FieldKind::kBoxes, static_cast<std::size_t>(boxes - fields.begin()) + 1);
    if (second != fields.end()) {
      return Status::InvalidArgument("fields \"" + boxes->name + "\" and \"" + second->name +
                                     "\" are both boxes; a sample has one boxes field (its per_box fields "
                                     "follow it): keep one");
    }
  }
  const auto per_box = first(FieldKind::kPerBox);
  if (per_box != fields.end() && boxes == fields.end()) {
    return Status::InvalidArgument(
        "field \"" + per_box->name +
        "\" is per_box, a value for each of the sample's boxes, but the fields have "
        "no boxes field; add one, e.g. \"boxes=json:boxes(key=boxes), " +
        per_box->name + "=" + joined_sources(per_box->sources) + ":per_box(key=KEY)\"");
  }
  if (first(FieldKind::kImage) != fields.end()) return Status::Ok();
  const auto follower = std::find_if(fields.begin(), fields.end(), [](const FieldSpec& f) {
    return f.kind == FieldKind::kMask || f.kind == FieldKind::kBoxes;
  });
  if (follower == fields.end()) return Status::Ok();
  return Status::InvalidArgument(
      "field \"" + follower->name + "\" is " + (follower->kind == FieldKind::kMask ? "a mask" : "boxes") +
      ", which follows the sample's image, but the fields have no image field; add "
      "one, e.g. \"image=jpg;png, " +
      follower->name + "=" + joined_sources(follower->sources) + ":" +
      std::string(to_string(follower->kind)) + "\"");
}

}  // namespace

std::optional<FieldKind> parse_field_kind(std::string_view name) { return parse_enum<FieldKind>(name); }
std::optional<MissingField> parse_missing_field(std::string_view name) {
  return parse_enum<MissingField>(name);
}
std::string_view to_string(FieldKind kind) { return enum_name(kind); }
std::string_view to_string(MissingField missing) { return enum_name(missing); }
std::string_view to_string(BoxFormat format) { return enum_name(format); }

FieldKind default_kind(std::string_view source) {
  const std::string_view last = last_component(source);
  for (const std::string_view image : kImageExtensions) {
    if (image.substr(1) == last) return FieldKind::kImage;
  }
  if (last == "cls") return FieldKind::kLabel;
  if (last == "txt") return FieldKind::kText;
  if (last == "npy") return FieldKind::kArray;
  return FieldKind::kBytes;
}

bool is_json_source(std::string_view source) { return last_component(source) == "json"; }

Result<std::vector<FieldSpec>> parse_fields(std::string_view text) {
  if (trim(text).empty()) {
    return Status::InvalidArgument("fields is empty; write NAME=SOURCES entries separated by ',', e.g. " +
                                   std::string(kExample));
  }
  std::vector<FieldSpec> fields;
  std::vector<std::string> entries;  // each one named, for the overlap's message
  std::size_t number = 0;
  for (std::size_t start = 0;;) {
    const std::size_t comma = entry_end(text, start);
    const std::string_view entry =
        text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    const EntryReader reader(++number, entry);
    if (trim(entry).empty()) {
      return Status::InvalidArgument("fields entry " + std::to_string(number) +
                                     " is empty (two ',' in a row, or one at an end); remove it");
    }
    Result<FieldSpec> spec = reader.read();
    if (!spec.ok()) return spec.status();
    for (std::size_t earlier = 0; earlier < fields.size(); ++earlier) {
      if (fields[earlier].name == spec->name) {
        return reader.bad("names \"" + spec->name + "\" again (" + entries[earlier] +
                          " has it); give each field its own name");
      }
    }
    if (fields.size() == kMaxFields) {
      return Status::InvalidArgument("fields has more than " + std::to_string(kMaxFields) +
                                     " entries; a sample holds at most " + std::to_string(kMaxFields) +
                                     " fields");
    }
    entries.push_back("entry " + std::to_string(number));
    fields.push_back(std::move(spec).value());
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (Status s = check_overlaps(fields, entries); !s.ok()) return s;
  if (Status s = check_followers(fields); !s.ok()) return s;
  return fields;
}

}  // namespace forkfeed
