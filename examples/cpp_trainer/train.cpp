// A small C++ training loop on forkfeed: a nearest-class-mean classifier over the
// normalised pixels of an ImageFolder. Each epoch first scores every batch with the
// class means learned so far, then adds the batch to them. The loader's state is taken
// after every epoch, as a trainer's checkpoint holds it, and a second loader resumes
// from the last one.
//
//   train DATA_DIR [EPOCHS] [WORKERS]
//
// Exits 0 when every epoch delivered every sample of the dataset exactly once.
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <forkfeed/loader.h>

namespace {

// The running mean of each class's samples, and the class whose mean is nearest.
class ClassMeans {
 public:
  ClassMeans(std::size_t classes, std::size_t features)
      : sums_(classes, std::vector<double>(features, 0.0)), counts_(classes, 0) {}

  std::size_t nearest(const float* x) const {
    std::size_t best = 0;
    double best_distance = std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < sums_.size(); ++c) {
      if (counts_[c] == 0) continue;
      double d = 0;
      for (std::size_t f = 0; f < sums_[c].size(); ++f) {
        const double diff = x[f] - sums_[c][f] / counts_[c];
        d += diff * diff;
      }
      if (d < best_distance) best_distance = d, best = c;
    }
    return best;
  }

  void add(const float* x, std::size_t label) {
    for (std::size_t f = 0; f < sums_[label].size(); ++f) sums_[label][f] += x[f];
    ++counts_[label];
  }

 private:
  std::vector<std::vector<double>> sums_;
  std::vector<std::uint64_t> counts_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: train DATA_DIR [EPOCHS] [WORKERS]\n");
    return 2;
  }
  forkfeed::LoaderOptions options;
  options.image_folder = argv[1];
  options.batch_size = 8;
  options.size = 16;
  options.dtype = forkfeed::DType::kFloat32;  // normalised with ImageNet's mean and std
  options.transform = "eval";
  options.workers = argc > 3 ? static_cast<std::uint32_t>(std::atoi(argv[3])) : 2;
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 2;

  auto opened = forkfeed::Loader::open(options);
  if (!opened.ok()) {
    std::fprintf(stderr, "train: %s\n", opened.status().message().c_str());
    return 1;
  }
  forkfeed::Loader& loader = **opened;
  const std::size_t features = std::size_t{options.size} * options.size * 3;
  ClassMeans model(loader.dataset().classes().size(), features);

  bool exactly_once = true;
  std::string checkpoint;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    std::vector<int> seen(loader.dataset().size(), 0);
    std::uint64_t samples = 0, correct = 0;
    try {
      for (const forkfeed::Batch& batch : loader) {  // one pass; errors are thrown
        const auto* pixels = static_cast<const float*>(batch.data());
        for (std::size_t i = 0; i < batch.size(); ++i) {
          const float* x = pixels + i * features;
          const auto label = static_cast<std::size_t>(batch.labels()[i]);
          correct += model.nearest(x) == label;
          model.add(x, label);
          ++seen[batch.sample_indices()[i]];
          ++samples;
        }
      }
    } catch (const forkfeed::Error& e) {
      std::fprintf(stderr, "train: epoch %d: %s\n", epoch, e.what());
      return 1;
    }
    for (int n : seen) exactly_once = exactly_once && n == 1;
    checkpoint = loader.state();  // saved with the model's weights, in a real trainer
    std::printf("epoch %d: %llu samples, %.1f%% scored right before learning them\n", epoch,
                static_cast<unsigned long long>(samples), samples ? 100.0 * correct / samples : 0.0);
  }
  if (!exactly_once) {
    std::fprintf(stderr, "train: an epoch did not deliver every sample exactly once\n");
    return 1;
  }
  // A restarted job: a new loader, from the checkpoint, goes on with the next epoch.
  auto resumed = forkfeed::Loader::open(options, checkpoint);
  if (!resumed.ok() || (*resumed)->epoch() != static_cast<std::uint64_t>(epochs)) {
    std::fprintf(stderr, "train: resuming from the checkpoint failed: %s\n",
                 resumed.ok() ? "wrong epoch" : resumed.status().message().c_str());
    return 1;
  }
  std::printf("resumed from the checkpoint at epoch %llu\n", static_cast<unsigned long long>(epochs));
  return 0;
}
