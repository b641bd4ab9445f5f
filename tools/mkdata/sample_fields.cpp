// The members forkfeed-mkdata --fields writes beside each image: every value from the
// formulas of sample_fields.h, which a test may compute again.
#include "tools/mkdata/sample_fields.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <exception>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "base/printable.h"
#include "tools/mkdata/image_file.h"
#include "tools/mkdata/splitmix64.h"
#include "workers/image_codecs.h"

namespace forkfeed::mkdata {
namespace {

static_assert(std::endian::native == std::endian::little,
              "embedding_npy() writes the host's floats as '<f4'");

constexpr std::uint64_t kCaptionLengthSalt = 1;
constexpr std::uint64_t kScoreSalt = 2;
constexpr std::uint64_t kCaptionWordSalt = 16;

std::uint64_t draw(std::uint64_t seed, std::uint32_t n, std::uint64_t salt) {
  return splitmix64(splitmix64(seed) ^ (salt << 32 | n));
}

std::uint32_t label_of(const SyntheticDatasetSpec& spec, std::uint32_t n) { return n % spec.classes; }

}  // namespace

// clang-format off
const std::array<std::string_view, 40> kCaptionWords = {
    "a", "photo", "of", "the", "small", "red", "dog", "on", "beach", "with", "two", "cats",
    "under", "blue", "sky", "near", "old", "bridge", "at", "night",
    "café", "naïve", "crème", "brûlée", "Straße", "señor", "smørrebrød", "über",
    "東京", "日本語", "Ελλάδα", "мост", "🙂", "fjord", "piñata", "résumé",
    "and", "in", "green", "field",
};
// clang-format on

Result<std::vector<std::string>> parse_member_list(std::string_view text) {
  std::vector<std::string> members;
  const auto bad = [&](const std::string& what) {
    return Status::InvalidArgument("--fields " + quoted_start(text, 100) + ": " + what);
  };
  std::string known;
  for (const std::string_view m : kFieldMembers) known += (known.empty() ? "" : ", ") + std::string(m);
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view member =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    if (member.empty()) return bad("an empty name; list members separated by ',' (" + known + ")");
    if (std::find(kFieldMembers.begin(), kFieldMembers.end(), member) == kFieldMembers.end()) {
      return bad("unknown member " + quoted_start(member, 40) + "; use some of " + known);
    }
    if (std::find(members.begin(), members.end(), member) != members.end()) {
      return bad(std::string(member) + " is listed twice");
    }
    members.emplace_back(member);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (std::find(members.begin(), members.end(), "jpg") == members.end()) {
    return bad("no jpg; every sample has its image, so list jpg where its member goes");
  }
  return members;
}

std::string caption(std::uint64_t seed, std::uint32_t n) {
  const std::uint64_t length = draw(seed, n, kCaptionLengthSalt);
  const std::uint64_t words = length % 8 == 0 ? 40 + length / 8 % 40 : 1 + length % 12;
  std::string text;
  for (std::uint64_t k = 0; k < words; ++k) {
    if (k > 0) text += ' ';
    text += kCaptionWords[draw(seed, n, kCaptionWordSalt + k) % kCaptionWords.size()];
  }
  return text;
}

std::string json_record(std::uint64_t seed, std::uint32_t n, std::uint32_t label) {
  const std::uint64_t score = draw(seed, n, kScoreSalt) % 10001;
  char text[96];
  std::snprintf(text, sizeof text, "{\"label\": %u, \"score\": %u.%04u, \"caption_id\": %u}", label,
                static_cast<unsigned>(score / 10000), static_cast<unsigned>(score % 10000), n);
  return text;
}

std::string embedding_npy(std::uint32_t n) {
  constexpr std::size_t kElements = 8;
  // As numpy.save writes it (numpy.lib.format._wrap_header): version 1.0, the header
  // padded with 1 to 64 spaces and a newline to end where the 10-byte preamble and it make
  // a multiple of 64.
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(kElements) + ",), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  for (std::size_t k = 0; k < kElements; ++k) {
    const float value = static_cast<float>(n) + static_cast<float>(k) / 8.0f;
    char bytes[sizeof value];
    std::memcpy(bytes, &value, sizeof value);
    out.append(bytes, sizeof bytes);
  }
  return out;
}

Result<std::string> mask_png(const SyntheticDatasetSpec& spec, std::uint32_t n, std::string_view member) {
  try {
    const cv::Size size = image_size_of(spec, n);
    const int w = size.width, h = size.height;
    const int label = static_cast<int>(label_of(spec, n));
    cv::Mat1b mask(size);
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        mask(y, x) =
            static_cast<unsigned char>(member == "seg.png" ? (16 * label + 4 * (4 * y / h) + 4 * x / w) % 256
                                                           : 255 * (x + y) / (w + h - 2));
      }
    }
    std::vector<unsigned char> bytes;
    const Result<bool> encoded = image_codecs::encode(".png", mask, bytes, {cv::IMWRITE_PNG_COMPRESSION, 1});
    if (!encoded.ok()) return encoded.status();
    if (!*encoded) {
      return Status::Internal("OpenCV could not encode a grey PNG; check that its imgcodecs module has PNG");
    }
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {  // cv::Exception, bad_alloc: stop them at the API edge
    return Status::Internal("could not make the " + std::string(member) + " of synthetic image " +
                            std::to_string(n) + ": " + e.what());
  }
}

std::string boxes_json(const SyntheticDatasetSpec& spec, std::uint32_t n) {
  const cv::Size size = image_size_of(spec, n);
  const auto label = label_of(spec, n);
  // The first pixel whose 4 p / extent is `block`: ceil(block extent / 4).
  const auto first = [](int block, int extent) { return (block * extent + 3) / 4; };
  std::string boxes, labels;
  for (int by = 0; by < 4; ++by) {
    for (int bx = 0; bx < 4; ++bx) {
      const int x0 = first(bx, size.width), x1 = first(bx + 1, size.width);
      const int y0 = first(by, size.height), y1 = first(by + 1, size.height);
      boxes += (boxes.empty() ? "[" : ", [") + std::to_string(x0) + ", " + std::to_string(y0) + ", " +
               std::to_string(x1 - x0) + ", " + std::to_string(y1 - y0) + "]";
      labels += (labels.empty() ? "" : ", ") + std::to_string((16 * label + 4 * by + bx) % 256);
    }
  }
  return "{\"boxes\": [" + boxes + "], \"labels\": [" + labels + "]}";
}

Result<std::string> field_member(const SyntheticDatasetSpec& spec, std::uint32_t n, std::string_view member) {
  if (member == "txt") return caption(spec.seed, n);
  if (member == "cls") return std::to_string(label_of(spec, n));
  if (member == "json") return json_record(spec.seed, n, label_of(spec, n));
  if (member == "npy") return embedding_npy(n);
  if (member == "seg.png" || member == "depth.png") return mask_png(spec, n, member);
  if (member == "boxes.json") return boxes_json(spec, n);
  return Status::Internal("forkfeed-mkdata makes no member " + std::string(member));
}

}  // namespace forkfeed::mkdata
