// follow_mask: a pipeline's geometry on one image, and a mask made to follow it
// (transforms/sample_geometry.h), for test_masks.py to replay the recorded geometry with
// torchvision's functional ops on the same mask. Usage:
//   follow_mask PIPELINE SEED HEIGHT WIDTH MASK.raw OUT.raw FILL IMAGE_OUT.raw [BOXES.f32 BOXES_OUT.f32]
// MASK.raw holds HEIGHT x WIDTH uint8. The pipeline runs on an image whose three channels
// are the mask, with the draws of sample (SEED, 0, 0), as a worker runs it: its steps
// (resizes nearest here), then its pixel ops. OUT.raw gets the mask that follows it,
// IMAGE_OUT.raw the image's first channel; with BOXES.f32 (K x 4 float32, XYXY in the
// image's pixels; the boxes the ops that draw from them see), BOXES_OUT.f32 gets K x 5
// float32: each box as follow_boxes() moved it, then 1 where keeps_box() keeps it, else 0.
// stdout a line per step and move (CENTRED: 1 where the step keeps only the boxes whose
// centre it holds, RandomIoUCrop's):
//   step X Y W H OUT_W OUT_H CENTRED
//   hflip | vflip
//   affine ANGLE TX TY SCALE SHEAR_X SHEAR_Y (CX CY | none)
// Exit 2 for bad arguments or a pipeline that does not build.
#include <array>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "transforms/pipeline.h"
#include "transforms/sample_geometry.h"

namespace {

using forkfeed::KeyedRng;
using forkfeed::SampleGeometry;

void print(const SampleGeometry& g) {
  std::cout.precision(17);
  for (const forkfeed::GeometryStep& s : g.steps) {
    std::cout << "step " << s.x << ' ' << s.y << ' ' << s.width << ' ' << s.height << ' ' << s.out_width
              << ' ' << s.out_height << ' ' << (s.centred_boxes_only ? 1 : 0) << '\n';
  }
  for (const forkfeed::fn::Move& m : g.moves) {
    switch (m.kind) {
      case forkfeed::fn::Move::Kind::kHflip: std::cout << "hflip\n"; break;
      case forkfeed::fn::Move::Kind::kVflip: std::cout << "vflip\n"; break;
      case forkfeed::fn::Move::Kind::kAffine: {
        const auto& a = m.affine;
        std::cout << "affine " << a.angle << ' ' << a.translate[0] << ' ' << a.translate[1] << ' ' << a.scale
                  << ' ' << a.shear[0] << ' ' << a.shear[1];
        if (a.center) {
          std::cout << ' ' << (*a.center)[0] << ' ' << (*a.center)[1] << '\n';
        } else {
          std::cout << " none\n";
        }
        break;
      }
    }
  }
}

// K x 4 float32 boxes read from `from`.
std::vector<forkfeed::Box> read_boxes(const char* from) {
  std::ifstream in(from, std::ios::binary);
  std::vector<forkfeed::Box> boxes;
  for (forkfeed::Box b; in.read(reinterpret_cast<char*>(b.data()), sizeof b);) boxes.push_back(b);
  return boxes;
}

// Writes each of `boxes` followed, and whether it is kept, to `to`.
bool follow_boxes_in(const SampleGeometry& g, std::vector<forkfeed::Box> boxes, const char* to) {
  forkfeed::follow_boxes(g, boxes);
  std::ofstream out(to, std::ios::binary);
  for (const forkfeed::Box& b : boxes) {
    const std::array<float, 5> row{b[0], b[1], b[2], b[3],
                                   forkfeed::keeps_box(b, output_size(g)) ? 1.0f : 0.0f};
    out.write(reinterpret_cast<const char*>(row.data()), sizeof row);
  }
  if (out.flush()) return true;
  std::cerr << to << ": cannot write\n";
  return false;
}

bool write(const char* path, const cv::Mat& m) {
  std::ofstream to(path, std::ios::binary);
  to.write(reinterpret_cast<const char*>(m.data), static_cast<std::streamsize>(m.total()));
  if (to.flush()) return true;
  std::cerr << path << ": cannot write\n";
  return false;
}

int run(int argc, char** argv) {
  if (argc != 9 && argc != 11) {
    std::cerr << "usage: follow_mask PIPELINE SEED HEIGHT WIDTH MASK.raw OUT.raw FILL IMAGE_OUT.raw "
                 "[BOXES.f32 BOXES_OUT.f32]\n";
    return 2;
  }
  const std::uint64_t seed = std::stoull(argv[2]);
  const int height = std::stoi(argv[3]), width = std::stoi(argv[4]);
  const double fill = std::stod(argv[7]);
  forkfeed::PipelineOptions options;
  options.max_pixels = std::uint64_t{1} << 40;
  options.mean = {0.5f, 0.5f, 0.5f};
  options.std = {0.25f, 0.25f, 0.25f};
  auto pipeline = forkfeed::Pipeline::build(argv[1], options);
  if (!pipeline.ok()) {
    std::cerr << pipeline.status().message() << '\n';
    return 2;
  }
  cv::Mat mask(height, width, CV_8UC1);
  std::ifstream in(argv[5], std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(mask.data), static_cast<std::streamsize>(mask.total()))) {
    std::cerr << argv[5] << ": cannot read " << mask.total() << " bytes\n";
    return 2;
  }

  KeyedRng rng({seed, 0, 0});
  SampleGeometry g;
  g.width = width;
  g.height = height;
  const std::vector<forkfeed::Box> boxes = argc == 11 ? read_boxes(argv[9]) : std::vector<forkfeed::Box>{};
  if (forkfeed::Status s = pipeline->steps(width, height, rng, g.steps, boxes); !s.ok()) {
    std::cerr << s.message() << '\n';
    return 2;
  }
  cv::Mat image;
  cv::cvtColor(mask, image, cv::COLOR_GRAY2RGB);
  for (const forkfeed::GeometryStep& s : g.steps) {
    image = forkfeed::fn::crop(image, s.x, s.y, s.width, s.height, s.fill).clone();
    if (s.resizes()) cv::resize(image, image, cv::Size(s.out_width, s.out_height), 0, 0, cv::INTER_NEAREST);
  }
  if (pipeline->run_pixels(image, rng, &g.moves)) forkfeed::fn::hflip(image);

  cv::Mat out(image.rows, image.cols, CV_8UC1);
  forkfeed::follow(g, mask, fill, out);
  cv::Mat first;
  cv::extractChannel(image, first, 0);
  if (!write(argv[6], out) || !write(argv[8], first)) return 2;
  if (argc == 11 && !follow_boxes_in(g, boxes, argv[10])) return 2;
  print(g);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "follow_mask: " << e.what() << '\n';
    return 2;
  }
}
