// reference_batches: what the C++ Loader delivers, byte for byte, for the package's tests
// to compare the Python side against. Usage:
//   reference_batches DATA OUT BATCH WORKERS SIZE SEED TRANSFORM DTYPE EPOCHS
// OUT gets, per batch: u64 epoch, u64 index, u64 samples, u64 image bytes; then the
// samples' u64 dataset indices, their i64 labels and the image bytes as delivered.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "forkfeed/loader.h"

namespace {

void put(std::ofstream& out, std::uint64_t v) { out.write(reinterpret_cast<const char*>(&v), sizeof v); }

int run(char** argv) {
  forkfeed::LoaderOptions o;
  o.image_folder = argv[1];
  o.batch_size = static_cast<std::uint32_t>(std::stoul(argv[3]));
  o.workers = static_cast<std::uint32_t>(std::stoul(argv[4]));
  o.size = static_cast<std::uint32_t>(std::stoul(argv[5]));
  o.seed = std::stoull(argv[6]);
  o.transform = argv[7];
  const auto dtype = forkfeed::parse_dtype(argv[8]);
  if (!dtype) {
    std::cerr << "reference_batches: bad dtype\n";
    return 2;
  }
  o.dtype = *dtype;
  const int epochs = std::stoi(argv[9]);
  o.log_level = "warn";

  std::unique_ptr<forkfeed::Loader> loader = forkfeed::Loader::open(o).value_or_throw();
  std::ofstream out(argv[2], std::ios::binary);
  for (int e = 0; e < epochs; ++e) {
    for (forkfeed::Batch& batch : *loader) {
      put(out, batch.epoch());
      put(out, batch.index());
      put(out, batch.size());
      put(out, batch.bytes());
      for (std::uint64_t i : batch.sample_indices()) put(out, i);
      for (std::int64_t label : batch.labels()) put(out, static_cast<std::uint64_t>(label));
      out.write(static_cast<const char*>(batch.data()), static_cast<std::streamsize>(batch.bytes()));
    }
  }
  out.close();
  if (!out) {
    std::cerr << "reference_batches: cannot write " << argv[2] << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 10) {
    std::cerr << "usage: reference_batches DATA OUT BATCH WORKERS SIZE SEED TRANSFORM DTYPE EPOCHS\n";
    return 2;
  }
  try {
    return run(argv);
  } catch (const std::exception& e) {
    std::cerr << "reference_batches: " << e.what() << "\n";
    return 1;
  }
}
