// WebDataset's key rule (formats/member_key.h).
#include "formats/member_key.h"

namespace forkfeed {

std::optional<MemberKey> split_member_name(std::string_view name) {
  // WebDataset (webdataset/tariterators.py, base_plus_ext) splits with the regular
  // expression ^((?:.*/|)[^.]+)[.]([^/]*)$: the key is any prefix ending in '/' (the
  // longest that works, as .* is greedy) or none, then at least one byte up to the first
  // '.'; the extension, after that '.', holds no '/'. So "a/b/x.y.jpg" is ("a/b/x",
  // "y.jpg"), "x" and ".x" have no key, and "d/.x" is ("d/", "x"). Names with a newline
  // aside (.* stops at one), this loop is that expression.
  std::size_t prefix_end = name.size();
  for (;;) {
    const std::size_t slash = prefix_end == 0 ? std::string_view::npos : name.rfind('/', prefix_end - 1);
    prefix_end = slash == std::string_view::npos ? 0 : slash + 1;
    if (prefix_end < name.size() && name[prefix_end] != '.') {
      const std::size_t dot = name.find('.', prefix_end);
      if (dot != std::string_view::npos && name.find('/', dot + 1) == std::string_view::npos) {
        return MemberKey{name.substr(0, dot), name.substr(dot + 1)};
      }
    }
    if (prefix_end == 0) return std::nullopt;
    prefix_end = slash;  // the next candidate ends at an earlier '/'
  }
}

}  // namespace forkfeed
