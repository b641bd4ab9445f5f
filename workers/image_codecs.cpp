// image_codecs: libopencv_imgcodecs opened with dlopen() the first time an image is decoded
// or encoded through OpenCV, and its two functions found by their (C++) symbol names.
#include "workers/image_codecs.h"

#include <dlfcn.h>

#include <opencv2/imgcodecs.hpp>
#include <string>
#include <type_traits>

namespace forkfeed::image_codecs {
namespace {

// The library CMake linked against (FORKFEED_IMGCODECS_SONAME), and the symbols of the two
// overloads below in OpenCV 4 with the C++11 ABI of libstdc++.
constexpr const char* kLibrary = FORKFEED_IMGCODECS_SONAME;
constexpr const char* kImdecode = "_ZN2cv8imdecodeERKNS_11_InputArrayEi";
constexpr const char* kImencode =
    "_ZN2cv8imencodeERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
    "RKNS_11_InputArrayERSt6vectorIhSaIhEERKSB_IiSaIiEE";

// The exact types of the overloads we name, so that a call through the pointers is the call
// the headers declare.
using Imdecode = cv::Mat (*)(cv::InputArray, int);
using Imencode = bool (*)(const cv::String&, cv::InputArray, std::vector<uchar>&, const std::vector<int>&);
static_assert(std::is_same_v<Imdecode, decltype(static_cast<Imdecode>(&cv::imdecode))>);
static_assert(std::is_same_v<Imencode, decltype(static_cast<Imencode>(&cv::imencode))>);

struct Library {
  Imdecode imdecode = nullptr;
  Imencode imencode = nullptr;
  Status status = Status::Ok();
};

// Opened once per process and never closed: decoding may go on until exit.
const Library& library() {
  static const Library lib = [] {
    Library l;
    void* handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      l.status = Status::FailedPrecondition(std::string("cannot load OpenCV's ") + kLibrary +
                                            " to decode an image " +
                                            "that is not a JPEG: " + (why ? why : "unknown error") +
                                            "; install libopencv-imgcodecs (tools/setup.sh does)");
      return l;
    }
    l.imdecode = reinterpret_cast<Imdecode>(::dlsym(handle, kImdecode));
    l.imencode = reinterpret_cast<Imencode>(::dlsym(handle, kImencode));
    if (l.imdecode == nullptr || l.imencode == nullptr) {
      l.status = Status::FailedPrecondition(std::string(kLibrary) +
                                            " has no cv::imdecode or cv::imencode of the OpenCV forkfeed was "
                                            "built with; rebuild forkfeed against the installed OpenCV");
    }
    return l;
  }();
  return lib;
}

}  // namespace

Result<cv::Mat> decode(const cv::Mat& encoded, int flags) {
  const Library& lib = library();
  if (!lib.status.ok()) return lib.status;
  return lib.imdecode(encoded, flags);
}

Result<bool> encode(const std::string& ext, const cv::Mat& image, std::vector<unsigned char>& out,
                    const std::vector<int>& params) {
  const Library& lib = library();
  if (!lib.status.ok()) return lib.status;
  return lib.imencode(ext, image, out, params);
}

}  // namespace forkfeed::image_codecs
