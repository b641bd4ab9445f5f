// transform_ops (see transform_ops.h): main, and the colour ops, each with the argument
// checks of torchvision.transforms.functional.
//   adjust_brightness|adjust_contrast|adjust_saturation|adjust_sharpness FACTOR
//   adjust_hue HUE_FACTOR                  posterize BITS        solarize THRESHOLD
//   gaussian_blur KX KY SIGMAX SIGMAY
//   rgb_to_grayscale | autocontrast | equalize | invert | hflip | vflip
#include <cmath>
#include <exception>
#include <fstream>
#include <iostream>
#include <iterator>
#include <opencv2/core.hpp>
#include <stdexcept>

#include "python/tests/reference/transform_ops.h"
#include "transforms/functional.h"

namespace {

namespace fn = forkfeed::fn;
using Args = std::vector<double>;

double non_negative(const char* what, double value) {
  if (value < 0) throw std::invalid_argument(std::string(what) + " must be non-negative");
  return value;
}

int whole(const char* what, double value, int low, int high) {
  if (value != std::floor(value) || value < low || value > high) {
    throw std::invalid_argument(std::string(what) + " must be a whole number in [" + std::to_string(low) +
                                ", " + std::to_string(high) + "]");
  }
  return static_cast<int>(value);
}

void hue(const Args& args, cv::Mat& img) {
  if (!(args[0] >= -0.5 && args[0] <= 0.5)) throw std::invalid_argument("hue_factor must be in [-0.5, 0.5]");
  fn::adjust_hue(img, args[0]);
}

void solarize(const Args& args, cv::Mat& img) {
  if (args[0] > 255) throw std::invalid_argument("threshold must not exceed 255");
  fn::solarize(img, args[0]);
}

void gaussian_blur(const Args& args, cv::Mat& img) {
  const std::array<int, 2> size = {whole("KX", args[0], 1, 1 << 15), whole("KY", args[1], 1, 1 << 15)};
  if (size[0] % 2 == 0 || size[1] % 2 == 0) throw std::invalid_argument("kernel sizes must be odd");
  if (!(args[2] > 0 && args[3] > 0)) throw std::invalid_argument("sigmas must be positive");
  fn::gaussian_blur(img, size, {args[2], args[3]});
}

struct ColourOp {
  const char* name;
  size_t arg_count;
  void (*apply)(const Args& args, cv::Mat& img);
};

const ColourOp kColourOps[] = {
    {"adjust_brightness", 1,
     [](const Args& a, cv::Mat& img) { fn::adjust_brightness(img, non_negative("FACTOR", a[0])); }},
    {"adjust_contrast", 1,
     [](const Args& a, cv::Mat& img) { fn::adjust_contrast(img, non_negative("FACTOR", a[0])); }},
    {"adjust_saturation", 1,
     [](const Args& a, cv::Mat& img) { fn::adjust_saturation(img, non_negative("FACTOR", a[0])); }},
    {"adjust_sharpness", 1,
     [](const Args& a, cv::Mat& img) { fn::adjust_sharpness(img, non_negative("FACTOR", a[0])); }},
    {"adjust_hue", 1, hue},
    {"posterize", 1, [](const Args& a, cv::Mat& img) { fn::posterize(img, whole("BITS", a[0], 0, 8)); }},
    {"solarize", 1, solarize},
    {"gaussian_blur", 4, gaussian_blur},
    {"rgb_to_grayscale", 0, [](const Args&, cv::Mat& img) { fn::rgb_to_grayscale(img); }},
    {"autocontrast", 0, [](const Args&, cv::Mat& img) { fn::autocontrast(img); }},
    {"equalize", 0, [](const Args&, cv::Mat& img) { fn::equalize(img); }},
    {"invert", 0, [](const Args&, cv::Mat& img) { fn::invert(img); }},
    {"hflip", 0, [](const Args&, cv::Mat& img) { fn::hflip(img); }},
    {"vflip", 0, [](const Args&, cv::Mat& img) { fn::vflip(img); }},
};

// One OUT.raw OP [ARG...] group of the command line.
struct Job {
  std::string out_path;
  std::string op;
  Args args;
};

double number(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw std::invalid_argument("not a number: '" + text + "'");
  return value;
}

std::vector<Job> parse_jobs(const std::vector<std::string>& words) {
  std::vector<Job> jobs;
  auto word = words.begin();
  while (word != words.end()) {
    if (std::distance(word, words.end()) < 2) throw std::invalid_argument("expected OUT.raw OP [ARG...]");
    Job job{*word, *(word + 1), {}};
    for (word += 2; word != words.end() && *word != ";"; ++word) job.args.push_back(number(*word));
    if (word != words.end()) ++word;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

cv::Mat read_raw(const std::string& path, int height, int width) {
  cv::Mat img(height, width, CV_8UC3);
  std::ifstream in(path, std::ios::binary);
  const auto bytes = static_cast<std::streamsize>(img.total() * img.elemSize());
  if (!in.read(reinterpret_cast<char*>(img.data), bytes) || in.peek() != std::ifstream::traits_type::eof()) {
    throw std::invalid_argument(path + ": cannot read exactly " + std::to_string(bytes) + " bytes (" +
                                std::to_string(height) + "x" + std::to_string(width) + "x3)");
  }
  return img;
}

void write_raw(const std::string& path, const cv::Mat& img) {
  const cv::Mat packed = img.isContinuous() ? img : img.clone();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(packed.data),
            static_cast<std::streamsize>(packed.total() * packed.elemSize()));
  if (!out.flush()) throw std::runtime_error(path + ": cannot write");
}

void apply(const Job& job, cv::Mat& img) {
  if (!colour_op(job.op, job.args, img) && !geometry_op(job.op, job.args, img)) {
    throw std::invalid_argument("unknown op '" + job.op + "'");
  }
}

// Runs the job on a copy of `input` placed as a view inside a larger frame, as the
// pipeline's ops see crops of a decoded image: the result must land in the view, and the
// frame around it must stay as it was. An empty string when it did.
std::string run_in_view(const Job& job, const cv::Mat& input, cv::Mat& result) {
  constexpr int kMargin = 2;
  const cv::Scalar kFrameLevel = cv::Scalar::all(77);
  cv::Mat frame(input.rows + 2 * kMargin, input.cols + 2 * kMargin, CV_8UC3, kFrameLevel);
  cv::Mat view = frame(cv::Rect(kMargin, kMargin, input.cols, input.rows));
  const uint8_t* view_data = view.data;
  input.copyTo(view);
  apply(job, view);
  if (view.data != view_data) return job.op + " did not change the image in place";
  result = view.clone();
  view.setTo(kFrameLevel);
  cv::Mat changed;
  cv::compare(frame.reshape(1), kFrameLevel, changed, cv::CMP_NE);
  if (cv::countNonZero(changed) != 0) return job.op + " wrote outside the image's view";
  return {};
}

int run(const std::vector<std::string>& words) {
  if (words.size() < 5) {
    std::cerr << "usage: transform_ops IN.raw HEIGHT WIDTH OUT.raw OP [ARG...] [; OUT.raw OP [ARG...]]...\n";
    return 2;
  }
  const double height = number(words[1]), width = number(words[2]);
  if (height < 1 || width < 1 || height != std::floor(height) || width != std::floor(width)) {
    throw std::invalid_argument("HEIGHT and WIDTH must be positive whole numbers");
  }
  const cv::Mat input = read_raw(words[0], static_cast<int>(height), static_cast<int>(width));
  for (const Job& job : parse_jobs({words.begin() + 3, words.end()})) {
    cv::Mat result;
    if (const std::string broken = run_in_view(job, input, result); !broken.empty()) {
      std::cerr << "transform_ops: " << broken << "\n";
      return 3;
    }
    write_raw(job.out_path, result);
  }
  return 0;
}

}  // namespace

bool colour_op(const std::string& name, const std::vector<double>& args, cv::Mat& img) {
  for (const ColourOp& op : kColourOps) {
    if (name != op.name) continue;
    if (args.size() != op.arg_count) {
      throw std::invalid_argument(name + ": expected " + std::to_string(op.arg_count) + " arguments, got " +
                                  std::to_string(args.size()));
    }
    op.apply(args, img);
    return true;
  }
  return false;
}

int main(int argc, char** argv) {
  try {
    return run({argv + 1, argv + argc});
  } catch (const std::exception& e) {
    std::cerr << "transform_ops: " << e.what() << "\n";
    return 2;
  }
}
