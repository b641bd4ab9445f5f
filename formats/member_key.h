// WebDataset's key rule: which sample a tar member belongs to, by its name.
#pragma once

#include <optional>
#include <string_view>

namespace forkfeed {

// A member name split as WebDataset's base_plus_ext does: the key is the name up to the
// first '.' of its last path component, folders kept; the extension is the rest, as
// written (compare it case-insensitively). "a/b/x.y.jpg": key "a/b/x", extension "y.jpg".
struct MemberKey {
  std::string_view key;
  std::string_view extension;
};
// nullopt for a name WebDataset gives no key (no '.' in it, or only a leading one, as in
// "__index__" or ".hidden"): such a member belongs to no sample and is passed over.
std::optional<MemberKey> split_member_name(std::string_view name);

}  // namespace forkfeed
