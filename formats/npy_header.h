// The header of a NumPy .npy member (format versions 1.0, 2.0 and 3.0): the dtype, the
// shape and where the data lies, so that an array field's bytes can be copied into a
// batch as they are. Only what a batch can hold as it is gets through: plain numbers in
// little-endian (or byte-order-free) layout and C order. Everything else is refused with
// a BadData that says what is wrong and how to save the array instead; the caller adds
// the shard, the key and the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/fields.h"
#include "forkfeed/status.h"

namespace forkfeed {

// The magic string, version and header length come first: 10 bytes in version 1.0, 12 in
// 2.0 and 3.0. Reading this many bytes of a member is enough for npy_header_bytes().
inline constexpr std::size_t kNpyPreambleBytes = 12;
// NumPy's own bound (numpy.load's max_header_size): a plain dtype's header needs ~128.
inline constexpr std::uint64_t kMaxNpyHeaderBytes = 10000;
// NumPy 1.x's NPY_MAXDIMS.
inline constexpr std::size_t kMaxNpyDims = 32;

struct NpyHeader {
  ElementType dtype = ElementType::kUint8;  // to_string() and element_bytes() in forkfeed/fields.h
  std::vector<std::int64_t> shape;          // empty: a 0-d array (one element)
  std::uint64_t data_offset = 0;            // of the first element, from the start of the member
  std::uint64_t data_bytes = 0;             // item size x every dimension (0 for an empty array)
  std::uint64_t elements() const { return data_bytes / element_bytes(dtype); }
  bool operator==(const NpyHeader&) const = default;
};

// The offset of the data (preamble, header text and its padding), from a member's first
// bytes: at least kNpyPreambleBytes of them, or the whole member if it is shorter. For a
// caller that reads a member's header alone. BadData for a member that is not .npy (no
// magic string), a version other than 1.0, 2.0, 3.0, a header over kMaxNpyHeaderBytes.
Result<std::uint64_t> npy_header_bytes(std::string_view start);

// Reads the header of the .npy member of `member_bytes` bytes whose first bytes are
// `start` (the whole header at least, as npy_header_bytes() gives its size, or the whole
// member). The header is a Python dict of exactly 'descr', 'fortran_order' and 'shape',
// in any order, in ASCII, padded with spaces and a newline. BadData, the message naming
// what is wrong, for: a truncated preamble or header, a header longer than the member,
// a byte that is not printable ASCII, a dict that is not one (a missing, repeated or
// unknown key, trailing junk), a dtype that is no ElementType (big-endian, object,
// structured, strings, complex), fortran_order True, a shape that is not a tuple of
// kMaxNpyDims or fewer whole numbers, or whose data would not fit in 2^63 bytes, and a
// member whose size is not data_offset + data_bytes. InvalidArgument when `start` is
// shorter than the header and the member is not: the caller read too little.
Result<NpyHeader> parse_npy_header(std::string_view start, std::uint64_t member_bytes);

// The shape as NumPy prints it: "()", "(8,)", "(3, 4)".
std::string npy_shape_text(const std::vector<std::int64_t>& shape);

}  // namespace forkfeed
