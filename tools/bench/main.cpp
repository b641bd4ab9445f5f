// forkfeed-bench: measures how fast a Loader delivers batches, and can dump the delivered
// sample order so that exactly-once and ordering can be checked from outside.
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "forkfeed/loader.h"
#include "tools/bench/progress_line.h"
#include "tools/bench/report.h"

namespace forkfeed::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report it

volatile std::sig_atomic_t g_interrupted = 0;
// Stores what the page touches read, so the compiler cannot drop the reads.
volatile std::uint64_t g_touch_sink = 0;

void on_sigint(int) { g_interrupted = 1; }

// The first Ctrl-C lets the current batch finish; SA_RESETHAND makes a second one fatal.
// Installed before the workers are forked, so a forked worker survives the terminal's
// SIGINT too and the loader stops it in order.
void install_sigint_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int fail(const std::string& message) {
  std::fprintf(stderr, "forkfeed-bench: %s\n", message.c_str());
  return 1;
}

struct BenchFlags {
  LoaderOptions options;
  std::uint64_t epochs = 1;
  bool json = false;
  std::string dump_path;
};

// Fills `flags`; returns the exit code when the program should end now (--help, bad flags).
std::optional<int> parse_flags(int argc, char** argv, BenchFlags& flags) {
  CLI::App app(
      "Measures the throughput of a forkfeed Loader on an image dataset.\n\n"
      "Runs E passes (epochs) over an ImageFolder tree or a manifest with N forked decode\n"
      "workers, reads every batch in place, and reports images/s, the time spent waiting\n"
      "for each batch (p50/p99), the shared memory arena and skipped samples. A live\n"
      "progress line is drawn when stdout is a terminal. --dump-indices writes the\n"
      "delivered order, one sample per line, so exactly-once can be checked from outside.\n"
      "Ctrl-C stops after the current batch and prints the summary so far.\n",
      "forkfeed-bench");
  app.option_defaults()->always_capture_default();
  app.get_formatter()->column_width(30);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "forkfeed-bench: " + std::string(e.what()) + " (see --help)\n";
  });
  app.footer(
      "Examples:\n"
      "  forkfeed-mkdata --out /tmp/imgs --images 2000 --classes 10 --seed 1\n"
      "  forkfeed-bench --data /tmp/imgs --workers 8 --batch 128 --epochs 2\n"
      "  forkfeed-bench --manifest train.tsv --transform eval --dtype float32 --json\n"
      "  forkfeed-bench --data /tmp/imgs --no-shuffle --dump-indices order.tsv\n\n"
      "The dump has one line per delivered sample: epoch<TAB>batch<TAB>sample_index<TAB>label.\n"
      "Exit status: 0 done, 1 bad data or loader error, 130 interrupted, other: bad arguments.");

  // Counts are unsigned; without this, "-5" would wrap around silently for 64-bit ones.
  const CLI::Validator not_negative(
      [](std::string& v) { return v.starts_with('-') ? "must not be negative: " + v : std::string(); }, "",
      "NOT_NEGATIVE");
  LoaderOptions& o = flags.options;
  std::string transform = "train";
  std::string dtype = "uint8";
  bool no_shuffle = false;
  auto* data =
      app.add_option("--data", o.image_folder, "ImageFolder root: one subfolder per class")->type_name("DIR");
  auto* manifest = app.add_option("--manifest", o.manifest, "Text file of 'relative/path<TAB>label' lines")
                       ->type_name("FILE");
  data->excludes(manifest);
  app.add_option("--workers", o.workers, "Decode worker processes")->type_name("N")->check(not_negative);
  app.add_option("--batch", o.batch_size, "Samples per batch")->type_name("B")->check(not_negative);
  app.add_option("--epochs", flags.epochs, "Passes over the dataset")
      ->type_name("E")
      ->check(not_negative)
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}));
  app.add_option("--transform", transform, "train: random resized crop + flip; eval: resize + center crop")
      ->check(CLI::IsMember({"train", "eval"}));
  app.add_option("--size", o.size, "Output height and width in pixels")->type_name("S")->check(not_negative);
  app.add_option("--dtype", dtype, "uint8 NHWC, or float32 NCHW normalised")
      ->check(CLI::IsMember({"uint8", "float32"}));
  app.add_option("--seed", o.seed, "Seed of the shuffle and of the random crops")
      ->type_name("X")
      ->check(not_negative);
  app.add_option("--rank", o.rank, "This process's rank")->type_name("R")->check(not_negative);
  app.add_option("--world-size", o.world_size, "Number of ranks sharing the dataset")
      ->type_name("W")
      ->check(not_negative);
  app.add_option("--prefetch", o.prefetch, "Batches in flight per worker")
      ->type_name("P")
      ->check(not_negative);
  app.add_flag("--drop-last", o.drop_last, "Drop the last partial batch and the rank remainder");
  app.add_flag("--no-shuffle", no_shuffle, "Deliver samples in index order");
  app.add_option("--log-level", o.log_level, "Log level (default: $FORKFEED_LOG_LEVEL, else info)")
      ->type_name("LEVEL")
      ->check(
          CLI::IsMember({"trace", "debug", "info", "warn", "warning", "err", "error", "critical", "off"}));
  app.add_flag("--json", flags.json, "Print only one JSON object on stdout");
  app.add_option("--dump-indices", flags.dump_path, "Write the delivered order to FILE")->type_name("FILE");

  try {
    app.parse(argc, argv);
    if (data->count() + manifest->count() == 0) throw CLI::RequiredError("--data DIR or --manifest FILE");
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  const std::optional<TransformKind> kind = parse_transform(transform);
  const std::optional<DType> type = parse_dtype(dtype);
  if (!kind || !type) return fail("unknown --transform " + transform + " or --dtype " + dtype);
  o.transform = *kind;
  o.dtype = *type;
  o.shuffle = !no_shuffle;
  return std::nullopt;
}

// The --dump-indices file, written through stdio's buffer.
class IndexDump {
 public:
  Status open(const std::string& path) {
    path_ = path;
    file_.reset(std::fopen(path.c_str(), "we"));
    if (!file_) return Status::FromErrno("cannot open --dump-indices file " + path, errno);
    std::setvbuf(file_.get(), nullptr, _IOFBF, 1 << 20);
    return Status::Ok();
  }
  void write(const Batch& batch) {
    if (!file_) return;
    const auto indices = batch.sample_indices();
    const auto labels = batch.labels();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const int n = std::fprintf(
          file_.get(), "%llu\t%llu\t%llu\t%lld\n", static_cast<unsigned long long>(batch.epoch()),
          static_cast<unsigned long long>(batch.index()), static_cast<unsigned long long>(indices[i]),
          static_cast<long long>(labels[i]));
      if (n < 0 && error_ == 0) error_ = errno;
    }
  }
  // Flushes and closes; reports the first write error (a full disk, say).
  Status close() {
    if (!file_) return Status::Ok();
    if (std::fflush(file_.get()) != 0 && error_ == 0) error_ = errno;
    if (std::fclose(file_.release()) != 0 && error_ == 0) error_ = errno;
    if (error_ != 0) return Status::FromErrno("cannot write --dump-indices file " + path_, error_);
    return Status::Ok();
  }

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
  int error_ = 0;  // errno of the first failed write
};

// Reads one byte per 4 KiB page: the pages are really faulted in, at a negligible cost.
std::uint64_t touch_pages(const Batch& batch) {
  const auto* bytes = static_cast<const unsigned char*>(batch.data());
  std::uint64_t sum = 0;
  for (std::size_t offset = 0; offset < batch.bytes(); offset += 4096) sum += bytes[offset];
  return sum;
}

// Runs the passes, filling the measured part of `report`. Stops early on Ctrl-C (with
// report.interrupted set) or at the first failed batch, whose Status it returns.
Status run_passes(Loader& loader, const BenchFlags& flags, IndexDump& dump, RunReport& report) {
  ProgressLine progress(flags.epochs, loader.batches_per_epoch(), !flags.json);
  std::uint64_t checksum = 0;
  Status status;
  const auto start = Clock::now();
  for (std::uint64_t pass = 0; pass < flags.epochs && !g_interrupted && status.ok(); ++pass) {
    for (;;) {
      const auto asked = Clock::now();
      Result<std::optional<Batch>> next = loader.next();
      if (!next.ok()) {
        status = next.status();
        break;
      }
      if (!next.value().has_value()) {
        ++report.epochs;
        break;
      }
      const Batch& batch = *next.value();
      report.wait_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - asked).count());
      checksum += touch_pages(batch);
      dump.write(batch);
      report.images += batch.size();
      ++report.batches;
      progress.update(pass, batch.index(), report.images);
      if (g_interrupted) break;
    }
  }
  report.wall_s = seconds_since(start);
  g_touch_sink = checksum;
  progress.finish();
  // A Ctrl-C from the terminal reaches the whole process group; an error that follows
  // it is part of stopping, not a result.
  report.interrupted = g_interrupted != 0;
  return report.interrupted ? Status::Ok() : status;
}

int run(const BenchFlags& flags) {
  IndexDump dump;
  if (!flags.dump_path.empty()) {
    if (Status s = dump.open(flags.dump_path); !s.ok()) return fail(s.message());
  }
  install_sigint_handler();

  RunReport report;
  report.options = flags.options;
  report.epochs_requested = flags.epochs;
  const auto open_start = Clock::now();
  Result<std::unique_ptr<Loader>> opened = Loader::open(flags.options);
  if (!opened.ok()) return fail(opened.status().message());
  std::unique_ptr<Loader> loader = std::move(opened).value();
  report.startup_s = seconds_since(open_start);
  report.dataset_size = loader->dataset().size();
  report.classes = loader->dataset().classes().size();

  const Status status = run_passes(*loader, flags, dump, report);
  report.stats = loader->stats();
  loader.reset();  // stops and reaps the workers before anything is reported
  if (!status.ok()) return fail(status.message());
  if (Status s = dump.close(); !s.ok()) return fail(s.message());

  if (flags.json) {
    std::printf("%s\n", json_line(report).c_str());
    std::fflush(stdout);
  } else {
    print_human(report, stdout);
  }
  return report.interrupted ? kExitInterrupted : 0;
}

}  // namespace
}  // namespace forkfeed::bench

int main(int argc, char** argv) {
  forkfeed::bench::BenchFlags flags;
  if (std::optional<int> code = forkfeed::bench::parse_flags(argc, argv, flags)) return *code;
  return forkfeed::bench::run(flags);
}
