// group_samples: one shard's members to ShardSamples, by WebDataset's grouping rule, with
// labels read from the members or from the key's folder.
#include "dataset/shards/shard_samples.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <utility>

#include "base/printable.h"
#include "base/utf8.h"
#include "dataset/image_extensions.h"
#include "dataset/shards/member_values.h"
#include "formats/content_digest.h"
#include "formats/label_text.h"
#include "formats/npy_header.h"

namespace forkfeed {
namespace {

// `text` equals `lowered` when ASCII letters are lowered.
bool equal_lowered(std::string_view text, std::string_view lowered) {
  return text.size() == lowered.size() && std::equal(text.begin(), text.end(), lowered.begin(),
                                                     [](char c, char l) { return ascii_lower(c) == l; });
}

// " or ": ".jpg or .png", a field's sources in a message.
std::string source_list(const FieldSpec& field) {
  std::string text;
  for (std::size_t i = 0; i < field.sources.size(); ++i) {
    if (i > 0) text += i + 1 == field.sources.size() ? " or " : ", ";
    text += '.';
    text += field.sources[i];
  }
  return text;
}

// Groups one shard; one instance per call.
class ShardGrouping {
 public:
  ShardGrouping(std::uint32_t shard, std::string_view shard_path, const LabelRule& rule,
                const ReadMember& read_member, OnError on_error, std::uint64_t max_file_bytes,
                const SampleSchema& fields)
      : shard_(shard),
        shard_path_(shard_path),
        rule_(rule),
        read_member_(read_member),
        values_(read_member),
        on_error_(on_error),
        max_image_bytes_(std::min<std::uint64_t>(max_file_bytes, std::numeric_limits<std::uint32_t>::max())),
        image_limit_name_(max_file_bytes <= max_image_bytes_ ? "max_file_bytes"
                                                             : "the most a shard sample can hold"),
        fields_(fields),
        array_of_(array_numbers(fields)),
        max_member_bytes_(std::min<std::uint64_t>(max_file_bytes, FieldSlice::kMissing - 1)),
        member_limit_name_(max_file_bytes <= max_member_bytes_
                               ? "max_file_bytes"
                               : "the most a shard sample's member can hold") {}

  Result<ShardScan> run(std::span<const TarMember> members) {
    scan_.arrays.resize(static_cast<std::size_t>(std::count(array_of_.begin(), array_of_.end(), true)));
    std::string_view key;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const std::optional<MemberKey> split = split_member_name(members[i].name);
      if (!split) continue;  // WebDataset passes over a name without a key
      if (run_.empty() || split->key != key) {
        if (Status s = finish_sample(key, members); !s.ok()) return s;
        key = split->key;
        run_.clear();
      }
      run_.push_back(Part{split->extension, i});
      if (!fields_.empty()) note_extension(split->extension);
    }
    if (Status s = finish_sample(key, members); !s.ok()) return s;
    if (fields_.empty() && rule_.source == LabelSource::kClassFolder) sort_classes();
    std::sort(scan_.extensions.begin(), scan_.extensions.end());
    // What the samples are made of; 0 is "not read" (DatasetIndex::contents()).
    scan_.content = std::max<std::uint64_t>(combined_digest(taken_), 1);
    return std::move(scan_);
  }

 private:
  struct Part {
    std::string_view extension;
    std::size_t member;  // index in members
  };

  static std::vector<bool> array_numbers(const SampleSchema& schema) {
    std::vector<bool> arrays;
    for (const FieldSpec& f : schema.fields) arrays.push_back(f.kind == FieldKind::kArray);
    return arrays;
  }

  // Ok, or the sample's problem as BadData when on_error=fail; with skip, counts it.
  Status bad(std::string_view key, const std::string& problem) {
    std::string reason =
        "shard " + printable(shard_path_) + ", sample " + printable_cut(key) + ": " + problem;
    if (on_error_ == OnError::kFail) return Status::BadData(std::move(reason));
    ++scan_.skipped;
    if (scan_.skip_reasons.size() < kMaxSkipReasons) scan_.skip_reasons.push_back(std::move(reason));
    return Status::Ok();
  }

  // The problem of the sample's i-th member when an earlier one has its extension:
  // WebDataset lower-cases extensions and refuses one twice in a sample.
  std::optional<std::string> duplicate(std::size_t i, std::span<const TarMember> members) const {
    for (std::size_t j = 0; j < i; ++j) {
      const std::string_view a = run_[j].extension, b = run_[i].extension;
      if (a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
            return ascii_lower(x) == ascii_lower(y);
          })) {
        return "two members with extension ." + printable_cut(b) + " (" +
               printable_cut(members[run_[j].member].name) + ", " +
               printable_cut(members[run_[i].member].name) + ")";
      }
    }
    return std::nullopt;
  }

  Status finish_sample(std::string_view key, std::span<const TarMember> members) {
    if (run_.empty()) return Status::Ok();
    if (!fields_.empty()) return finish_fields(key, members);
    const TarMember* image = nullptr;
    const TarMember* label = nullptr;
    const std::string_view label_extension = rule_.source == LabelSource::kCls ? "cls" : "json";
    for (std::size_t i = 0; i < run_.size(); ++i) {
      const TarMember& m = members[run_[i].member];
      if (std::optional<std::string> problem = duplicate(i, members)) return bad(key, *problem);
      if (has_image_extension(m.name)) {
        if (image != nullptr) {
          return bad(key, "two images, " + printable_cut(image->name) + " and " + printable_cut(m.name) +
                              "; a sample holds one image");
        }
        image = &m;
      } else if (rule_.source != LabelSource::kClassFolder &&
                 equal_lowered(run_[i].extension, label_extension)) {
        label = &m;
      }
    }
    if (image == nullptr) {
      return bad(key, "no image member (looked for " + std::string(kImageExtensionList) + ")");
    }
    if (image->size > max_image_bytes_) {
      return bad(key, "image " + printable_cut(image->name) + " is " + std::to_string(image->size) +
                          " bytes > " + std::string(image_limit_name_) + " " +
                          std::to_string(max_image_bytes_));
    }
    std::int64_t value = 0;
    if (rule_.source == LabelSource::kClassFolder) {
      // "./class_0/x" (tar -C dir .) is in the class of "class_0/x": one class, whatever
      // the tar that wrote the shard.
      std::string_view folder = key.substr(0, std::min(key.size(), key.rfind('/')));
      while (folder.starts_with("./")) folder.remove_prefix(2);
      if (folder.empty() || folder == "." || folder.size() == key.size()) {
        return bad(key,
                   "the key has no folder; label_rule class_folder needs members named <class>/<name>.<ext>");
      }
      const auto [it, added] =
          class_of_.try_emplace(std::string(folder), static_cast<std::int64_t>(class_of_.size()));
      value = it->second;  // first-seen order; sort_classes() makes it the sorted position
    } else {
      if (label == nullptr) return bad(key, "no ." + std::string(label_extension) + " member with its label");
      if (label->size > kMaxLabelBytes) {
        return bad(key, "label member " + printable_cut(label->name) + " is " + std::to_string(label->size) +
                            " bytes > " + std::to_string(kMaxLabelBytes));
      }
      Result<std::string> bytes = read_member_(*label);
      if (!bytes.ok()) return bytes.status();
      Result<std::int64_t> parsed =
          rule_.source == LabelSource::kCls ? parse_cls(*bytes) : parse_json_label(*bytes, rule_.json_field);
      if (!parsed.ok())
        return bad(key, "label member " + printable_cut(label->name) + " " + parsed.status().message());
      value = *parsed;
    }
    note_name_headers(*image);
    taken_.push_back(image->content);
    if (label != nullptr) taken_.push_back(label->content);
    scan_.samples.push_back(
        ShardSample{image->offset, shard_, static_cast<std::uint32_t>(image->size), value});
    return Status::Ok();
  }

  // Sets the bits of the fields `extension` is a source of, and keeps it in the shard's
  // extensions.
  void note_extension(std::string_view extension) {
    for (std::size_t f = 0; f < fields_.fields.size(); ++f) {
      for (const std::string& source : fields_.fields[f].sources) {
        if (equal_lowered(extension, source)) scan_.fields_seen |= std::uint32_t{1} << f;
      }
    }
    std::vector<std::string>& seen = scan_.extensions;
    if (seen.size() == kMaxExtensionsKept || std::any_of(seen.begin(), seen.end(), [&](const std::string& e) {
          return equal_lowered(extension, e);
        }))
      return;
    std::string lowered(extension);
    std::transform(lowered.begin(), lowered.end(), lowered.begin(), ascii_lower);
    seen.push_back(std::move(lowered));
  }

  // The parts of the sample that `field` takes: one of its sources' (null: none), and a
  // second one when the sample has two (null: it has not), which makes the sample bad data
  // as two images do without fields: which one the field meant, nothing says.
  std::pair<const Part*, const Part*> find_parts(const FieldSpec& field) const {
    std::pair<const Part*, const Part*> found{};
    for (const std::string& source : field.sources) {
      for (const Part& part : run_) {
        if (!equal_lowered(part.extension, source)) continue;
        (found.first == nullptr ? found.first : found.second) = &part;
        if (found.second != nullptr) return found;
      }
    }
    return found;
  }

  // Lists the next sample kept when `m`, the member at its slice's offset, has a name its
  // own header does not hold (and that a key may be read from).
  void note_name_headers(const TarMember& m) {
    if (m.name_headers != tar::kBlock && m.name_headers <= kMaxNameHeaderBytes)
      scan_.name_headers.push_back({scan_.samples.size(), m.name_headers});
  }

  // The key's own problem: one the slot cannot carry as a key.
  std::optional<std::string> key_problem(std::string_view key, const TarMember& anchor) const {
    if (key.size() > kMaxKeyBytes) {
      return "its key is " + std::to_string(key.size()) + " bytes, over the " + std::to_string(kMaxKeyBytes) +
             " a key may take: give its members shorter names";
    }
    if (const std::size_t valid = valid_utf8_prefix(key); valid != key.size()) {
      return "its key is not UTF-8 (at byte " + std::to_string(valid) +
             "): name its members in UTF-8, as keys are text";
    }
    if (anchor.name_headers > kMaxNameHeaderBytes) {
      return "member " + printable_cut(anchor.name) + " has " + std::to_string(anchor.name_headers) +
             " bytes of tar headers, over the " + std::to_string(kMaxNameHeaderBytes) +
             " read for a sample's key";
    }
    return std::nullopt;
  }

  // Adds the kept sample `key`'s arrays (by array field) to the shard's: InvalidArgument
  // when one holds another dtype than the field's first.
  Status add_arrays(std::string_view key, std::span<const std::optional<NpyHeader>> headers) {
    std::size_t a = 0;
    for (std::size_t f = 0; f < fields_.fields.size(); ++f) {
      if (!array_of_[f]) continue;
      ShardArrays& arrays = scan_.arrays[a];
      const std::optional<NpyHeader>& h = headers[a++];
      if (!h) continue;
      if (!arrays.seen) {
        arrays = ShardArrays{true, false, h->dtype, h->shape, std::string(key)};
      } else if (h->dtype != arrays.dtype) {
        return Status::InvalidArgument(
            "field \"" + fields_.fields[f].name + "\": in shard " + printable(shard_path_) + ", sample " +
            printable_cut(arrays.first_key) + " holds " + std::string(to_string(arrays.dtype)) +
            " and sample " + printable_cut(key) + " " + std::string(to_string(h->dtype)) +
            "; an array field has one dtype: save its arrays as one (numpy's astype), or take them in two "
            "fields");
      } else if (h->shape != arrays.shape) {
        arrays.varies = true;
      }
    }
    return Status::Ok();
  }

  // What a sample of a schema takes, field by field, before it is kept.
  struct Taken {
    std::array<std::optional<NpyHeader>, kMaxFields> arrays;  // by array field
    std::array<const TarMember*, kMaxFields> member{};        // by member column; null: lacking
    std::array<const FieldSpec*, kMaxFields> member_field{};
    std::array<std::int64_t, kMaxFields> labels;
    std::array<double, kMaxFields> numbers;
    Taken() {
      labels.fill(kMissingLabel);
      numbers.fill(std::numeric_limits<double>::quiet_NaN());
    }
  };

  // A sample of a schema: each field's member found and checked, its labels and numbers
  // read; a field it lacks is its problem (missing=error) or its marker.
  Status finish_fields(std::string_view key, std::span<const TarMember> members) {
    for (std::size_t i = 0; i < run_.size(); ++i) {
      if (std::optional<std::string> problem = duplicate(i, members)) return bad(key, *problem);
    }
    Taken taken;
    values_.next_sample();
    // This sample's members' contents, taken as its fields find them, stay only if it is kept.
    struct Rollback {
      std::vector<std::uint64_t>& taken;
      const std::size_t size;
      bool kept = false;
      ~Rollback() {
        if (!kept) taken.resize(size);
      }
    } rollback{taken_, taken_.size()};
    for (std::size_t f = 0; f < fields_.fields.size(); ++f) {
      if (std::optional<Status> end = take_field(key, members, f, taken)) return *end;
    }
    const std::size_t before = scan_.samples.size();
    Status kept = keep_sample(key, members, taken);
    rollback.kept = scan_.samples.size() > before;
    return kept;
  }

  // Field `f` of the sample `key` found among its members and read into `taken`: nullopt
  // when the sample goes on to its next field; else what finish_fields returns, the
  // sample's problem (Ok when skip counted it) or the shard's error.
  std::optional<Status> take_field(std::string_view key, std::span<const TarMember> members, std::size_t f,
                                   Taken& taken) {
    const FieldSpec& field = fields_.fields[f];
    if (!field.member_of.empty()) return std::nullopt;  // the image it views is read for it
    const FieldColumn& column = fields_.columns.of[f];
    const std::string named = "field \"" + field.name + "\"";
    const auto [part, second] = find_parts(field);
    const TarMember* m = part != nullptr ? &members[part->member] : nullptr;
    if (m != nullptr) taken_.push_back(m->content);
    if (second != nullptr) {
      return bad(key, named + " has two members, " + printable_cut(m->name) + " and " +
                          printable_cut(members[second->member].name) + ", of its sources " +
                          source_list(field) + "; a field reads one: name the one to read (\"" + field.name +
                          "=" + printable_cut(part->extension) + "\"), or each in a field of its own");
    }
    bool lacks = m == nullptr;
    if (m != nullptr && column.store == FieldColumn::Store::kMember) {
      if (m->size > max_member_bytes_) {
        return bad(key, named + ": member " + printable_cut(m->name) + " is " + std::to_string(m->size) +
                            " bytes > " + std::string(member_limit_name_) + " " +
                            std::to_string(max_member_bytes_));
      }
      taken.member[column.column] = m;
      taken.member_field[column.column] = &field;
      if (field.kind == FieldKind::kArray) {
        if (std::optional<Status> end = take_array(key, named, *m, f, taken)) return end;
      }
    } else if (m != nullptr) {
      MemberValues::Value v = values_.value(field, *m);
      if (!v.shard_error.ok()) return v.shard_error;
      if (!v.problem.empty()) return bad(key, named + ": " + v.problem);
      lacks = !v.label && !v.number;
      if (v.label) taken.labels[column.column] = *v.label;
      if (v.number) taken.numbers[column.column] = *v.number;
    }
    if (lacks && fields_.missing == MissingField::kError) {
      return bad(key, named + " is missing: " +
                          (m == nullptr ? "no " + source_list(field) + " member"
                                        : "member " + printable_cut(m->name) + " has no key \"" +
                                              printable(field.json_key) + "\"") +
                          " (missing=error; missing=skip or empty take such samples)");
    }
    return std::nullopt;
  }

  // Array field `f`'s member `m`: its .npy header read and checked into `taken`; as
  // take_field answers.
  std::optional<Status> take_array(std::string_view key, const std::string& named, const TarMember& m,
                                   std::size_t f, Taken& taken) {
    Status unread;
    Result<NpyHeader> header = values_.npy_header(m, unread);
    if (!unread.ok()) return unread;
    if (!header.ok())
      return bad(key, named + ": member " + printable_cut(m.name) + ": " + header.status().message());
    if (header->shape.size() > kMaxArrayRank) {
      return bad(key, named + ": member " + printable_cut(m.name) + " has " +
                          std::to_string(header->shape.size()) + " dimensions; at most " +
                          std::to_string(kMaxArrayRank) + " are carried");
    }
    taken.arrays[static_cast<std::size_t>(std::count(array_of_.begin(), array_of_.begin() + f, true))] =
        std::move(header).value();
    return std::nullopt;
  }

  // The sample `key` whose fields are `taken` kept: its slice (its first member field's;
  // without one, its first member's offset, from which the other members' are counted),
  // its other members' slices, labels, numbers and arrays; or its problem.
  Status keep_sample(std::string_view key, std::span<const TarMember> members, const Taken& taken) {
    const FieldColumns& columns = fields_.columns;
    // The sample's slice is its first member field's; without it, its first member's
    // offset, from which the other members' are counted.
    const TarMember* first = taken.member[0];
    const TarMember& anchor = first != nullptr ? *first : members[run_.front().member];
    const std::uint64_t at = anchor.offset;
    if (std::optional<std::string> problem = key_problem(key, anchor)) return bad(key, *problem);
    std::array<FieldSlice, kMaxFields> extra{};
    for (std::uint32_t k = 1; k < columns.members; ++k) {
      const TarMember* m = taken.member[k];
      if (m == nullptr) continue;  // FieldSlice{}: missing
      const std::int64_t from = static_cast<std::int64_t>(m->offset) - static_cast<std::int64_t>(at);
      if (from < std::numeric_limits<std::int32_t>::min() ||
          from > std::numeric_limits<std::int32_t>::max()) {
        return bad(key, "field \"" + taken.member_field[k]->name + "\": member " + printable_cut(m->name) +
                            " lies " + std::to_string(from) + " bytes from " + printable_cut(anchor.name) +
                            "; a sample's members must lie within 2 GiB of its first field's");
      }
      extra[k - 1] = FieldSlice{static_cast<std::int32_t>(from), static_cast<std::uint32_t>(m->size)};
    }
    if (Status s = add_arrays(key, taken.arrays); !s.ok()) return s;
    scan_.longest_key = std::max(scan_.longest_key, static_cast<std::uint32_t>(key.size()));
    note_name_headers(anchor);
    scan_.samples.push_back(ShardSample{
        at, shard_, first != nullptr ? static_cast<std::uint32_t>(first->size) : FieldSlice::kMissing,
        columns.labels > 0 ? taken.labels[0] : 0});
    scan_.field_slices.insert(scan_.field_slices.end(), extra.begin(),
                              extra.begin() + columns.extra_members());
    scan_.field_labels.insert(scan_.field_labels.end(), taken.labels.begin() + 1,
                              taken.labels.begin() + 1 + columns.extra_labels());
    scan_.field_numbers.insert(scan_.field_numbers.end(), taken.numbers.begin(),
                               taken.numbers.begin() + columns.numbers);
    return Status::Ok();
  }

  void sort_classes() {
    std::vector<std::string> names(class_of_.size());
    for (const auto& [name, seen] : class_of_) names[static_cast<std::size_t>(seen)] = name;
    std::vector<std::int64_t> order(names.size());  // first-seen position -> sorted position
    scan_.class_names = names;
    std::sort(scan_.class_names.begin(), scan_.class_names.end());
    for (std::size_t i = 0; i < names.size(); ++i) {
      order[i] = std::lower_bound(scan_.class_names.begin(), scan_.class_names.end(), names[i]) -
                 scan_.class_names.begin();
    }
    for (ShardSample& s : scan_.samples) s.label = order[static_cast<std::size_t>(s.label)];
  }

  const std::uint32_t shard_;
  const std::string_view shard_path_;
  const LabelRule& rule_;
  const ReadMember& read_member_;
  MemberValues values_;  // what the fields read from their members
  const OnError on_error_;
  const std::uint64_t max_image_bytes_;
  const std::string_view image_limit_name_;
  const SampleSchema& fields_;
  const std::vector<bool> array_of_;      // by field: whether it is an array field
  const std::uint64_t max_member_bytes_;  // with fields: of a member field's member
  const std::string_view member_limit_name_;
  ShardScan scan_;
  // The content digests of the members each kept sample takes, in the shard's order: a
  // member no field reads, or a sample left out, is no part of the dataset.
  std::vector<std::uint64_t> taken_;
  std::vector<Part> run_;  // the current sample's members
  std::unordered_map<std::string, std::int64_t> class_of_;
};

}  // namespace

Result<ShardScan> group_samples(std::uint32_t shard, std::string_view shard_path,
                                std::span<const TarMember> members, const LabelRule& rule,
                                const ReadMember& read_member, OnError on_error, std::uint64_t max_file_bytes,
                                const SampleSchema& fields) {
  return ShardGrouping(shard, shard_path, rule, read_member, on_error, max_file_bytes, fields).run(members);
}

std::vector<std::string> assign_class_labels(std::span<ShardScan> scans) {
  std::vector<std::string> all;
  for (const ShardScan& scan : scans) all.insert(all.end(), scan.class_names.begin(), scan.class_names.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  for (ShardScan& scan : scans) {
    std::vector<std::int64_t> global(scan.class_names.size());
    for (std::size_t i = 0; i < global.size(); ++i) {
      global[i] = std::lower_bound(all.begin(), all.end(), scan.class_names[i]) - all.begin();
    }
    for (ShardSample& s : scan.samples) s.label = global[static_cast<std::size_t>(s.label)];
  }
  return all;
}

}  // namespace forkfeed
