// What forkfeed-mkdata --fields writes beside each image of a WebDataset shard dataset:
// a caption, a label, a JSON record, an array and grey masks, each a pure function of
// the seed and the image's number, so that a test can compute what a loader must deliver.
//
// Image n is the sample of key "class_CCC/img_NNNNN" (NNNNN = n, CCC = its class n % classes);
// the shards hold the samples in key order. With h(salt) = splitmix64(splitmix64(seed) ^
// (salt << 32 | n)) (splitmix64.h; salts: 1 the caption's length, 2 the score, 16 + k the
// caption's word k):
//   txt   the caption: words = 1 + h(1) % 12, or 40 + h(1) / 8 % 40 when h(1) % 8 == 0 (one in
//         eight is long); word k is kCaptionWords[h(16 + k) % kCaptionWords.size()]; the
//         words joined by single spaces. UTF-8, a fifth of the words not ASCII.
//   cls   the class, in decimal ("3"), as without --fields.
//   json  {"label": C, "score": S, "caption_id": n}, S = (h(2) % 10001) / 10000 written
//         with four decimals ("0.0420"), on one line, no spaces but after ':' and ','.
//   npy   float32, shape (8,): element k = n + k / 8 (exact), saved as numpy.save does.
//   seg.png    grey 8-bit PNG, the image's size (w x h): pixel (x, y) = (16 C + 4 (4 y / h)
//              + 4 x / w) % 256 (integer division), a 4 x 4 grid of blocks.
//   depth.png  grey 8-bit PNG, the image's size: pixel (x, y) = 255 (x + y) / (w + h - 2).
//   boxes.json the boxes of seg.png's 16 blocks and their classes, COCO's way (x, y, w, h in
//              pixels): {"boxes": [[x0, y0, x1 - x0, y1 - y0], ...], "labels": [...]}, block
//              (bx, by) in the order by * 4 + bx, x0 = ceil(bx w / 4), x1 = ceil((bx + 1) w / 4)
//              (the first and one past the last column whose 4 x / w is bx; rows alike), its
//              label seg.png's class there; a block no pixel falls in has a box 0 wide.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/status.h"
#include "tools/mkdata/synthetic_images.h"

namespace forkfeed::mkdata {

// The members a sample may have, as --fields names them; "jpg" is the image itself (a
// ".png" member for the images that are PNG: see SyntheticDatasetSpec::special_every).
inline constexpr std::array<std::string_view, 8> kFieldMembers = {
    "jpg", "txt", "cls", "json", "npy", "seg.png", "depth.png", "boxes.json"};

// The words of the captions; some not ASCII ("café", "東京", ...), to test UTF-8 paths.
extern const std::array<std::string_view, 40> kCaptionWords;

// The --fields text read: member names from kFieldMembers, separated by ',', each once,
// "jpg" among them. InvalidArgument naming what is wrong otherwise.
Result<std::vector<std::string>> parse_member_list(std::string_view text);

std::string caption(std::uint64_t seed, std::uint32_t n);
std::string json_record(std::uint64_t seed, std::uint32_t n, std::uint32_t label);
std::string embedding_npy(std::uint32_t n);
// The grey mask `member` ("seg.png" or "depth.png") of image n of `spec`.
Result<std::string> mask_png(const SyntheticDatasetSpec& spec, std::uint32_t n, std::string_view member);

// The boxes.json of image n of `spec`.
std::string boxes_json(const SyntheticDatasetSpec& spec, std::uint32_t n);

// The bytes of member `member` (one of kFieldMembers but "jpg") of image n of `spec`.
Result<std::string> field_member(const SyntheticDatasetSpec& spec, std::uint32_t n, std::string_view member);

}  // namespace forkfeed::mkdata
