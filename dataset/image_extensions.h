// torchvision's IMG_EXTENSIONS and its has_file_allowed_extension test, shared by every
// source that decides which files are images (ImageFolder, the members of a tar shard),
// so they all agree with PyTorch on the same data.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

namespace forkfeed {

// ASCII lowering: enough for extensions and member names, since no non-ASCII character
// lowers into these extensions.
inline char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

inline constexpr std::array<std::string_view, 9> kImageExtensions = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                                                     ".pgm", ".tif",  ".tiff", ".webp"};
inline constexpr std::string_view kImageExtensionList =
    ".jpg, .jpeg, .png, .ppm, .bmp, .pgm, .tif, .tiff, .webp";

// True iff the lower-cased `name` ends with one of kImageExtensions (so "._x.jpg" from
// macOS counts, as it does in torchvision).
inline bool has_image_extension(std::string_view name) {
  return std::any_of(kImageExtensions.begin(), kImageExtensions.end(), [&](std::string_view ext) {
    return name.size() >= ext.size() && std::equal(ext.begin(), ext.end(), name.end() - ext.size(),
                                                   [&](char e, char c) { return e == ascii_lower(c); });
  });
}

}  // namespace forkfeed
