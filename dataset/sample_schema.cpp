// parse_fields and fields_text (forkfeed/fields.h): the text of a sample schema, read
// entry by entry, each error naming the entry and what to write instead; and where an
// index keeps each field (field_columns).
#include "dataset/sample_schema.h"

#include <algorithm>
#include <optional>
#include <set>

#include "base/option_names.h"
#include "base/printable.h"
#include "dataset/image_extensions.h"

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

// "jpg;png": sources as an entry writes them.
std::string joined(const std::vector<std::string>& sources) {
  std::string text;
  for (const std::string& s : sources) text += (text.empty() ? "" : ";") + s;
  return text;
}

// One entry of the text, read into a FieldSpec (view_of is the schema's to set).
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
    if (colon != std::string_view::npos) {
      if (Status s = read_kind(trim(rest.substr(colon + 1)), spec); !s.ok()) return s;
    }
    if (spec.kind == FieldKind::kMask && !spec.json_key.empty()) {
      if (Status s = read_mask_arguments(spec); !s.ok()) return s;
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

  Status read_kind(std::string_view text, FieldSpec& spec) const {
    std::string_view kind = trim(text.substr(0, text.find('(')));
    // What to write instead: a mask's fill, or a key.
    const std::string forms = kind == to_string(FieldKind::kMask)
                                  ? "write \"mask\" or \"mask(fill=N)\", e.g. \"seg=seg.png:mask(fill=255)\""
                                  : "write KIND or KIND(KEY), e.g. \"label=json:label(class_id)\"";
    const std::size_t open = text.find('(');
    if (open != std::string_view::npos) {
      if (!text.ends_with(')') || text.find(')') != text.size() - 1) {
        return bad("has \"" + printable_cut(text) + "\" after ':'; " + forms);
      }
      spec.json_key = std::string(trim(text.substr(open + 1, text.size() - open - 2)));
      if (spec.json_key.empty()) {
        return bad(kind == to_string(FieldKind::kMask)
                       ? "has nothing in (); " + forms
                       : "has an empty key in (); write the JSON key whose value it is, e.g. "
                         "\"label=json:label(class_id)\"");
      }
    } else if (text.find(')') != std::string_view::npos) {
      return bad("has \"" + printable_cut(text) + "\" after ':'; " + forms);
    }
    const std::optional<FieldKind> parsed = parse_field_kind(kind);
    if (!parsed) {
      return bad(kind.empty()
                     ? std::string("has no kind after ':'; write one of ") + enum_names_or<FieldKind>()
                     : "has the kind \"" + printable_cut(kind) + "\"; use " + enum_names_or<FieldKind>());
    }
    spec.kind = *parsed;
    return Status::Ok();
  }

  // A mask's "(fill=N, dtype=uint16)", read from where a key would be: each argument once,
  // the fill a value of the dtype.
  Status read_mask_arguments(FieldSpec& spec) const {
    const std::string text = spec.json_key;
    const auto refuse = [&] {
      return bad("has \"mask(" + printable_cut(text) +
                 ")\"; write \"mask\", \"mask(fill=N)\", \"mask(dtype=uint16)\" or both, N the class id of "
                 "pixels moved in from outside the image (0 to 255, or 65535 for uint16), e.g. \"" +
                 spec.name + "=" + spec.sources.front() + ":mask(fill=255)\"");
    };
    std::optional<std::string_view> fill, dtype;
    for (std::size_t start = 0; start <= text.size();) {
      const std::size_t comma = std::min(text.find(',', start), text.size());
      const std::string_view argument = trim(std::string_view(text).substr(start, comma - start));
      start = comma + 1;
      const std::size_t eq = argument.find('=');
      if (eq == std::string_view::npos) return refuse();
      const std::string_view key = trim(argument.substr(0, eq)), value = trim(argument.substr(eq + 1));
      std::optional<std::string_view>& slot = key == "fill" ? fill : dtype;
      if ((key != "fill" && key != "dtype") || slot) return refuse();
      slot = value;
    }
    if (dtype && *dtype != "uint8" && *dtype != "uint16") return refuse();
    spec.element = dtype && *dtype == "uint16" ? ElementType::kUint16 : ElementType::kUint8;
    if (fill) {
      const bool digits =
          !fill->empty() && fill->size() <= 5 &&
          std::all_of(fill->begin(), fill->end(), [](char c) { return c >= '0' && c <= '9'; });
      const long value = digits ? std::stol(std::string(*fill)) : -1;
      const long most = spec.element == ElementType::kUint16 ? 65535 : 255;
      if (value < 0 || value > most) return refuse();
      spec.fill = static_cast<std::uint16_t>(value);
    }
    spec.json_key.clear();
    return Status::Ok();
  }

  // A key reads a value of a .json member: label and number fields of json sources only,
  // and those need one.
  Status check_key(const FieldSpec& spec) const {
    const bool keyed_kind = spec.kind == FieldKind::kLabel || spec.kind == FieldKind::kNumber;
    const auto json = std::count_if(spec.sources.begin(), spec.sources.end(), is_json_source);
    if (!spec.json_key.empty() && !keyed_kind) {
      return bad("has a key, (" + printable_cut(spec.json_key) + "), but is " +
                 std::string(to_string(spec.kind)) +
                 "; only label and number fields read a key of a .json member: \"" + spec.name +
                 "=json:label(" + printable_cut(spec.json_key) + ")\", or leave the key out");
    }
    if (!spec.json_key.empty() && json != static_cast<std::ptrdiff_t>(spec.sources.size())) {
      return bad(
          "has a key, (" + printable_cut(spec.json_key) +
          "), which reads a .json member, but takes sources that are not json; a keyed field reads .json "
          "members only: \"" +
          spec.name + "=json:" + std::string(to_string(spec.kind)) + "(" + printable_cut(spec.json_key) +
          ")\"");
    }
    if (spec.json_key.empty() && keyed_kind && json > 0) {
      return bad("is a " + std::string(to_string(spec.kind)) +
                 " read from a .json member, and needs the key whose value it is: \"" + spec.name + "=" +
                 spec.sources.front() + ":" + std::string(to_string(spec.kind)) + "(KEY)\"");
    }
    return Status::Ok();
  }

  const std::size_t number_;
  const std::string_view entry_;
};

// Sets view_of on each image field whose sources are an earlier image field's, and
// refuses any other member two fields would both take. Keyed fields read a value of a
// .json member while indexing and take nothing from it: they share it with any field.
Status check_overlaps(std::vector<FieldSpec>& fields, const std::vector<std::string>& entries) {
  for (std::size_t b = 0; b < fields.size(); ++b) {
    FieldSpec& later = fields[b];
    if (!later.json_key.empty()) continue;
    const std::set<std::string> sources(later.sources.begin(), later.sources.end());
    for (std::size_t a = 0; a < b; ++a) {
      const FieldSpec& earlier = fields[a];
      if (!earlier.json_key.empty()) continue;
      if (earlier.kind == FieldKind::kImage && later.kind == FieldKind::kImage &&
          std::set<std::string>(earlier.sources.begin(), earlier.sources.end()) == sources) {
        later.view_of = earlier.view_of.empty() ? earlier.name : earlier.view_of;
        break;
      }
      for (const std::string& s : earlier.sources) {
        if (sources.count(s) == 0) continue;
        const bool images = earlier.kind == FieldKind::kImage && later.kind == FieldKind::kImage;
        return Status::InvalidArgument(
            "fields \"" + earlier.name + "\" and \"" + later.name + "\" both take ." + s + " members (" +
            entries[a] + " and " + entries[b] + "); a member is one field's" +
            (images ? ". Two views of one image are image fields with the same sources: \"" + later.name +
                          "=" + joined(earlier.sources) + "\""
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

// A mask follows the schema's first image field: there must be one.
Status check_masks(const std::vector<FieldSpec>& fields) {
  const auto kind_is = [](FieldKind k) { return [k](const FieldSpec& f) { return f.kind == k; }; };
  const auto mask = std::find_if(fields.begin(), fields.end(), kind_is(FieldKind::kMask));
  if (mask == fields.end() || std::any_of(fields.begin(), fields.end(), kind_is(FieldKind::kImage)))
    return Status::Ok();
  return Status::InvalidArgument(
      "field \"" + mask->name +
      "\" is a mask, which follows the sample's image, but the fields have no image "
      "field; add one, e.g. \"image=jpg;png, " +
      mask->name + "=" + joined(mask->sources) + ":mask\"");
}

}  // namespace

std::optional<FieldKind> parse_field_kind(std::string_view name) { return parse_enum<FieldKind>(name); }
std::optional<MissingField> parse_missing_field(std::string_view name) {
  return parse_enum<MissingField>(name);
}
std::string_view to_string(FieldKind kind) { return enum_name(kind); }
std::string_view to_string(MissingField missing) { return enum_name(missing); }

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
  if (Status s = check_masks(fields); !s.ok()) return s;
  return fields;
}

std::string fields_text(const std::vector<FieldSpec>& fields) {
  std::string text;
  for (const FieldSpec& f : fields) {
    if (!text.empty()) text += ", ";
    // Appended piece by piece: "(" + key + ")" makes GCC 12 warn falsely (-Wrestrict).
    text += f.name;
    text += '=';
    text += joined(f.sources);
    if (!f.json_key.empty() || f.kind != default_kind(f.sources.front())) {
      text += ':';
      text += to_string(f.kind);
      if (!f.json_key.empty()) {
        text += '(';
        text += f.json_key;
        text += ')';
      }
      std::string arguments;
      if (f.fill != 0) arguments += "fill=" + std::to_string(f.fill);
      if (f.element == ElementType::kUint16)
        arguments += (arguments.empty() ? "" : ", ") + std::string("dtype=uint16");
      if (!arguments.empty()) {
        text += '(';
        text += arguments;
        text += ')';
      }
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
      case FieldKind::kMask: {
        const auto viewed = std::find_if(fields.begin(), fields.begin() + static_cast<std::ptrdiff_t>(f),
                                         [&](const FieldSpec& e) { return e.name == fields[f].view_of; });
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
  SampleSchema schema;
  schema.missing = missing;
  if (text.empty()) return schema;
  auto fields = parse_fields(text);
  if (!fields.ok()) return fields.status();
  schema.fields = std::move(fields).value();
  schema.columns = field_columns(schema.fields);
  if (schema.columns.members == 0) {
    return Status::InvalidArgument(
        "fields \"" + printable_cut(text) +
        "\" has no field read from a member (image, text, bytes, array or mask); a sample needs one, e.g. "
        "\"image=jpg;png\"");
  }
  schema.text = fields_text(schema.fields);
  return schema;
}

}  // namespace forkfeed
