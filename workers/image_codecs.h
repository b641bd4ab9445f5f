// OpenCV's imgcodecs (cv::imdecode, cv::imencode), loaded on first use. Linked, it would
// load GDAL and some 120 other libraries into every process that links libforkfeed (0.13 s
// of start-up for every spawned worker, forkfeedd, tool and test), while only images that
// are not JPEG need it. Everything in the project that decodes or encodes through OpenCV
// goes through here.
#pragma once

#include <opencv2/core/mat.hpp>
#include <string>
#include <vector>

#include "forkfeed/status.h"

namespace forkfeed::image_codecs {

// cv::imdecode(encoded, flags): an empty Mat for data OpenCV cannot decode. Throws what it
// throws (cv::Exception). Fails (FailedPrecondition, naming the library) only if
// libopencv_imgcodecs cannot be loaded.
Result<cv::Mat> decode(const cv::Mat& encoded, int flags);

// cv::imencode(ext, image, out, params): false if OpenCV cannot encode it.
Result<bool> encode(const std::string& ext, const cv::Mat& image, std::vector<unsigned char>& out,
                    const std::vector<int>& params);

}  // namespace forkfeed::image_codecs
