// npy_member(): a .npy member as numpy.save writes it (format 1.0: the header padded with
// spaces and a newline so that the data starts at a multiple of 64), for suites that put
// arrays in shards.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace forkfeed::testing {

// A .npy of dtype `descr` ("<f4") and shape `shape` (numpy's text: "(8,)", "(2, 3)"),
// followed by `data`, which should be the bytes the shape and dtype take.
inline std::string npy_member(std::string_view descr, std::string_view shape, std::string_view data) {
  std::string dict = "{'descr': '" + std::string(descr) +
                     "', 'fortran_order': False, 'shape': " + std::string(shape) + ", }";
  dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(dict.size() & 0xFF);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict + std::string(data);
}

}  // namespace forkfeed::testing
