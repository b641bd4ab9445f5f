// parse_npy_header: the preamble (magic, version, header length), then the header's
// Python dict read by a small recursive-descent reader that takes exactly what
// numpy.save writes and what a hand-written header may vary (spacing, key order, quotes,
// trailing commas), and names the first thing it cannot use.
#include "formats/npy_header.h"

#include <array>
#include <limits>
#include <optional>
#include <string>

#include "base/printable.h"

namespace forkfeed {
namespace {

constexpr std::string_view kNpyMagic = "\x93NUMPY";

// NumPy's kind character of each ElementType; the descr's digit is its element_bytes().
struct DtypeCode {
  char kind;  // b, i, u, f
  ElementType type;
};

constexpr std::array<DtypeCode, 12> kDtypes = {{
    {'b', ElementType::kBool},
    {'i', ElementType::kInt8},
    {'i', ElementType::kInt16},
    {'i', ElementType::kInt32},
    {'i', ElementType::kInt64},
    {'u', ElementType::kUint8},
    {'u', ElementType::kUint16},
    {'u', ElementType::kUint32},
    {'u', ElementType::kUint64},
    {'f', ElementType::kFloat16},
    {'f', ElementType::kFloat32},
    {'f', ElementType::kFloat64},
}};

// "bool, int8, ...": the dtypes an array field may have, for a refusal.
std::string dtype_list() {
  std::string list;
  for (const DtypeCode& code : kDtypes)
    list += (list.empty() ? "" : ", ") + std::string(to_string(code.type));
  return list;
}

Status bad(std::string what) { return Status::BadData("the .npy header" + std::move(what)); }

std::uint32_t little_endian(std::string_view bytes) {
  std::uint32_t value = 0;
  for (std::size_t i = bytes.size(); i-- > 0;) value = value << 8 | static_cast<unsigned char>(bytes[i]);
  return value;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) { return is_digit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }

// The dtype of a descr string ("<f4"), or the BadData saying why it is none of ours.
Result<ElementType> dtype_of(std::string_view descr) {
  std::string quoted = "'";  // appended, not "'" + ...: GCC 12 warns of a false -Wrestrict there
  quoted.append(descr).append("'");
  if (descr.empty()) return bad("'s descr is empty; it names the dtype, e.g. '<f4'");
  const char order = descr[0];
  const std::string_view type = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return bad("'s descr " + quoted + " has no byte order ('<' or '|') before its type");
  }
  if (type.starts_with('O')) {
    return bad("'s dtype " + quoted +
               " is object: it holds Python objects, not numbers; save an array of one of " + dtype_list());
  }
  for (const DtypeCode& code : kDtypes) {
    const std::size_t size = element_bytes(code.type);
    if (type.size() != 2 || type[0] != code.kind || static_cast<std::size_t>(type[1] - '0') != size) continue;
    if (order == '>' && size > 1) {
      return bad("'s dtype " + quoted + " is big-endian; save it little-endian: a.astype('<" +
                 std::string(type) + "')");
    }
    if (order == '=' || (order == '|' && size > 1) || (order == '>' && size == 1)) {
      return bad("'s descr " + quoted + " gives no byte order forkfeed reads; numpy.save writes '<" +
                 std::string(type) + "'" + (size == 1 ? " or '|" + std::string(type) + "'" : ""));
    }
    return code.type;
  }
  return bad("'s dtype " + quoted + " is not one forkfeed reads (" + dtype_list() +
             "): strings, complex numbers, dates and records are not array fields");
}

// A reader of the header's dict. `text` is printable ASCII and whitespace (checked first),
// so any part of it may be quoted in a message as it is.
class HeaderDict {
 public:
  // Trailing padding aside, so that a message quotes no run of spaces.
  explicit HeaderDict(std::string_view text) : text_(text) {
    while (!text_.empty() && is_space(text_.back())) text_.remove_suffix(1);
  }

  Status read(NpyHeader& header) {
    skip_space();
    if (!take('{')) return bad(" is not a Python dict: it starts with " + quote_here());
    bool descr = false, fortran_order = false, shape = false;
    for (;;) {
      skip_space();
      if (take('}')) break;
      std::string key;
      if (Status s = read_string("a key", key); !s.ok()) return s;
      skip_space();
      if (!take(':')) return bad(" has no ':' after the key '" + key + "', at " + quote_here());
      skip_space();
      Status value;
      bool* seen = nullptr;
      if (key == "descr") {
        seen = &descr, value = read_descr(header);
      } else if (key == "fortran_order") {
        seen = &fortran_order, value = read_fortran_order();
      } else if (key == "shape") {
        seen = &shape, value = read_shape(header);
      } else {
        return bad(" has the key '" + key +
                   "'; a .npy header holds 'descr', 'fortran_order' and 'shape' only");
      }
      if (*seen) return bad(" has the key '" + key + "' twice");
      if (!value.ok()) return value;
      *seen = true;
      skip_space();
      if (take(',')) continue;
      if (take('}')) break;
      return bad(" has " + quote_here() + " after the value of '" + key + "', where ',' or '}' should be");
    }
    skip_space();
    if (at_ < text_.size()) return bad(" has " + quote_here() + " after its dict; only spaces may follow it");
    if (!descr) return bad(" has no 'descr' (the dtype)");
    if (!fortran_order) return bad(" has no 'fortran_order'");
    if (!shape) return bad(" has no 'shape'");
    return Status::Ok();
  }

 private:
  void skip_space() {
    while (at_ < text_.size() && is_space(text_[at_])) ++at_;
  }
  bool take(char c) {
    if (at_ == text_.size() || text_[at_] != c) return false;
    ++at_;
    return true;
  }
  // What the text holds from the reader's position on, for a message.
  std::string quote_here() const {
    return at_ == text_.size() ? "the end" : quoted_start(text_.substr(at_), 24);
  }

  // A Python string literal without escapes: 'descr' or "descr".
  Status read_string(std::string_view what, std::string& out) {
    const char quote = at_ < text_.size() ? text_[at_] : '\0';
    if (quote != '\'' && quote != '"')
      return bad(" has " + quote_here() + " where " + std::string(what) + " should be");
    const std::size_t end = text_.find(quote, at_ + 1);
    const std::size_t escape = text_.find('\\', at_ + 1);
    if (end == std::string_view::npos) return bad(" has a string with no closing quote at " + quote_here());
    if (escape < end)
      return bad(" has a string with a '\\' escape at " + quote_here() + "; no dtype needs one");
    out.assign(text_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return Status::Ok();
  }

  Status read_descr(NpyHeader& header) {
    if (at_ < text_.size() && text_[at_] == '[') {
      return bad("'s descr is a list of fields: a structured array; save each field as an array of its own");
    }
    std::string descr;
    if (Status s = read_string("the descr (a dtype string like '<f4')", descr); !s.ok()) return s;
    Result<ElementType> dtype = dtype_of(descr);
    if (!dtype.ok()) return dtype.status();
    header.dtype = *dtype;
    return Status::Ok();
  }

  Status read_fortran_order() {
    const std::size_t start = at_;
    while (at_ < text_.size() && is_word(text_[at_])) ++at_;
    const std::string_view word = text_.substr(start, at_ - start);
    if (word == "False") return Status::Ok();
    if (word == "True") {
      return bad(
          "'s fortran_order is True: the array is stored column-major; save it in C order with "
          "np.save(f, np.ascontiguousarray(a))");
    }
    at_ = start;
    return bad("'s fortran_order is " + quote_here() + ", not True or False");
  }

  // The shape as written, from its '(' to its ')' (or a start of it), for a message.
  std::string shape_text(std::size_t open) const {
    const std::size_t close = text_.find(')', open);
    if (close == std::string_view::npos) return quoted_start(text_.substr(open), 24);
    return std::string(text_.substr(open, close - open + 1));
  }

  Status read_shape(NpyHeader& header) {
    const std::size_t open = at_;
    if (!take('(')) {
      return bad("'s shape is " + quote_here() + ", not a tuple of whole numbers like (3, 4)");
    }
    bool comma = false;
    for (;;) {
      skip_space();
      if (take(')')) break;
      const std::size_t start = at_;
      if (at_ < text_.size() && text_[at_] == '-') {
        return bad("'s shape " + shape_text(open) + " has a negative dimension");
      }
      std::uint64_t value = 0;
      while (at_ < text_.size() && is_digit(text_[at_])) {
        const std::uint64_t digit = static_cast<std::uint64_t>(text_[at_++] - '0');
        if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10) {
          return bad("'s shape " + shape_text(open) + " has a dimension above 2^63");
        }
        value = value * 10 + digit;
      }
      // Python reads "03" as no number at all, and "3.0" or "3L" are no dimensions.
      const bool number = at_ > start && !(text_[start] == '0' && at_ - start > 1);
      if (!number ||
          (at_ < text_.size() && !is_space(text_[at_]) && text_[at_] != ',' && text_[at_] != ')')) {
        return bad("'s shape " + shape_text(open) + " is not a tuple of whole numbers like (3, 4)");
      }
      if (header.shape.size() == kMaxNpyDims) {
        return bad("'s shape " + shape_text(open) + " has more than " + std::to_string(kMaxNpyDims) +
                   " dimensions");
      }
      header.shape.push_back(static_cast<std::int64_t>(value));
      skip_space();
      if (take(',')) {
        comma = true;
        continue;
      }
      if (take(')')) break;
      return bad("'s shape " + shape_text(open) + " is not a tuple of whole numbers like (3, 4)");
    }
    if (header.shape.size() == 1 && !comma) {
      return bad("'s shape " + shape_text(open) + " is a number in parentheses, not a tuple: (" +
                 std::to_string(header.shape[0]) + ",) is");
    }
    return Status::Ok();
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

// data_bytes of `header`'s dtype and shape, or the BadData of a shape too large to be.
Status count_data_bytes(NpyHeader& header) {
  // Zero dimensions aside, so that a large shape of no elements is refused like a large one.
  std::uint64_t bytes = element_bytes(header.dtype);
  bool empty = false;
  for (const std::int64_t dim : header.shape) {
    if (dim == 0) empty = true;
    if (dim == 0 || !__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(dim), &bytes)) continue;
    bytes = std::numeric_limits<std::uint64_t>::max();
    break;
  }
  if (bytes > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return bad("'s shape " + npy_shape_text(header.shape) + " of " + std::string(to_string(header.dtype)) +
               " would need more than 2^63 bytes");
  }
  header.data_bytes = empty ? 0 : bytes;
  return Status::Ok();
}

}  // namespace

std::string npy_shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

Result<std::uint64_t> npy_header_bytes(std::string_view start) {
  if (start.empty()) return Status::BadData("the .npy member is empty");
  const std::string_view magic = start.substr(0, kNpyMagic.size());
  if (magic != kNpyMagic.substr(0, magic.size())) {
    return Status::BadData("not a .npy array: it starts with " + quoted_start(start, 8) +
                           ", not NumPy's \\x93NUMPY (an .npz holds several arrays: save each with np.save)");
  }
  if (start.size() < kNpyMagic.size() + 2) {
    return Status::BadData("the .npy member ends after " + std::to_string(start.size()) +
                           " bytes, inside its preamble");
  }
  const int major = static_cast<unsigned char>(start[6]), minor = static_cast<unsigned char>(start[7]);
  if ((major < 1 || major > 3) || minor != 0) {
    return Status::BadData("the .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                           " is not one forkfeed reads (1.0, 2.0, 3.0)");
  }
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t preamble = kNpyMagic.size() + 2 + length_bytes;
  if (start.size() < preamble) {
    return Status::BadData("the .npy member ends after " + std::to_string(start.size()) +
                           " bytes, inside its preamble of " + std::to_string(preamble));
  }
  const std::uint64_t header_length = little_endian(start.substr(kNpyMagic.size() + 2, length_bytes));
  if (header_length > kMaxNpyHeaderBytes) {
    return Status::BadData("the .npy header is " + std::to_string(header_length) + " bytes long, over " +
                           std::to_string(kMaxNpyHeaderBytes) +
                           " (numpy.load's own limit); a header of a plain array is about 128");
  }
  return preamble + header_length;
}

Result<NpyHeader> parse_npy_header(std::string_view start, std::uint64_t member_bytes) {
  if (start.size() > member_bytes) {
    return Status::InvalidArgument("parse_npy_header: " + std::to_string(start.size()) +
                                   " bytes given of a member of " + std::to_string(member_bytes));
  }
  Result<std::uint64_t> data_offset = npy_header_bytes(start);
  if (!data_offset.ok()) return data_offset.status();
  if (*data_offset > member_bytes) {
    return bad(" is " + std::to_string(*data_offset) + " bytes long by its preamble, past the end of the " +
               std::to_string(member_bytes) + "-byte member");
  }
  if (*data_offset > start.size()) {
    return Status::InvalidArgument("parse_npy_header: " + std::to_string(start.size()) +
                                   " bytes given of a header of " + std::to_string(*data_offset) +
                                   "; read npy_header_bytes() of them first");
  }
  const std::size_t preamble = start[6] == 1 ? 10 : 12;
  const std::string_view text = start.substr(preamble, *data_offset - preamble);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte < 0x20 || byte > 0x7E) && !is_space(text[i])) {
      static constexpr char kHex[] = "0123456789abcdef";
      return bad(" has the byte 0x" + std::string{kHex[byte >> 4], kHex[byte & 0xF]} + " at " +
                 std::to_string(preamble + i) + ", which is not printable ASCII");
    }
  }
  NpyHeader header;
  header.data_offset = *data_offset;
  if (Status s = HeaderDict(text).read(header); !s.ok()) return s;
  if (Status s = count_data_bytes(header); !s.ok()) return s;
  if (member_bytes != header.data_offset + header.data_bytes) {
    const std::uint64_t expected = header.data_offset + header.data_bytes;
    return Status::BadData("the .npy member is " + std::to_string(member_bytes) + " bytes, but its header (" +
                           std::string(to_string(header.dtype)) + ", shape " + npy_shape_text(header.shape) +
                           ") says " + std::to_string(header.data_offset) + " + " +
                           std::to_string(header.data_bytes) + " = " + std::to_string(expected) +
                           (member_bytes < expected ? ": the data is cut short" : ": junk follows the data"));
  }
  return header;
}

}  // namespace forkfeed
