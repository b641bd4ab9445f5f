// Encoded test images made in memory: a photo-like picture, any OpenCV encoding of it,
// and a CMYK JPEG as Photoshop writes it (OpenCV cannot write those).
#pragma once

#include <cstddef>
#include <opencv2/core/mat.hpp>
#include <string>
#include <vector>

namespace forkfeed::testing {

// A w x h BGR picture with smooth regions and an edge: blurred noise and a disc.
cv::Mat photo(int w, int h, int seed);

// `img` encoded by OpenCV as `ext` (".jpg", ".png", ...) with imwrite `params`.
std::vector<std::byte> encode(const cv::Mat& img, const std::string& ext,
                              const std::vector<int>& params = {});

// `img` (BGR) as a baseline JPEG with 4:4:4 chroma (no subsampling), made with libjpeg
// (OpenCV 4.6 cannot choose the subsampling).
std::vector<std::byte> jpeg_444(const cv::Mat& img, int quality);

// A w x h CMYK JPEG with an Adobe marker (inverted CMYK), made with libjpeg.
std::vector<std::byte> cmyk_jpeg(int w, int h);

// What OpenCV's imdecode makes of `file`, as RGB.
cv::Mat opencv_rgb(const std::vector<std::byte>& file);

}  // namespace forkfeed::testing
