// The --probe measurement: warm the page cache and the arena, then one timed pass per
// decode path over the same files, with the same per-sample crops, into the arena's slots.
#include "tools/bench/probe.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/logging.h"
#include "base/printable.h"
#include "base/stage_profile.h"
#include "dataset/dataset_source.h"
#include "forkfeed/dataset.h"
#include "plan/arena_plan.h"
#include "tools/bench/option_flags.h"
#include "tools/bench/report.h"
#include "transport/arena.h"
#include "transport/slot_contents.h"
#include "workers/fused_decode.h"
#include "workers/opencv_logging.h"
#include "workers/sample_pipeline.h"
#include "workers/sample_reader.h"

namespace forkfeed::bench {
namespace {

using Clock = std::chrono::steady_clock;

// One decode path's pass over the probed files.
struct PathRun {
  explicit PathRun(const char* path_name) : name(path_name) {}
  const char* name;
  std::uint64_t decoded = 0;  // samples written
  std::uint64_t failed = 0;   // files that could not be read, decoded or transformed
  std::string first_error;    // the first failure, naming its file
  double wall_s = 0;
  double cpu_s = 0;  // this thread's CPU time: the part of wall_s that was ours
  double images_per_s() const { return wall_s > 0 ? static_cast<double>(decoded) / wall_s : 0.0; }
  // Per second of this thread's CPU time: what the core could do had nothing else run.
  double images_per_cpu_s() const { return cpu_s > 0 ? static_cast<double>(decoded) / cpu_s : 0.0; }
};

// A stage of the fused path (StageProfile) in the --profile passes: its time per sample
// probed, and the share of the samples it ran on, each the median of the passes.
struct ProfileRow {
  std::string stage;
  double us_per_sample = 0;
  double ran = 0;
};

struct ProbeReport {
  LoaderOptions options;
  std::uint64_t dataset_size = 0;
  std::size_t classes = 0;           // 0 for a manifest
  std::vector<std::uint64_t> files;  // dataset indices probed, in order
  std::uint64_t bytes = 0;           // read by the warm-up
  std::uint64_t slot_bytes = 0;      // of the arena the samples are written to
  double warm_s = 0;
  std::vector<ProfileRow> profile;  // with --profile
  double profiled_us = 0;           // with --profile: a profiled pass's wall time per sample, median
  PathRun opencv{"opencv"};
  PathRun fused{"fused"};
  double ratio() const {
    return opencv.images_per_s() > 0 ? fused.images_per_s() / opencv.images_per_s() : 0.0;
  }
};

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// "opencv 812/2000, 604 img/s" redrawn on stderr at most 10 times a second, only when
// stderr is a terminal: stdout may be a --json consumer, and a log needs no redraws.
class ProbeProgress {
 public:
  ProbeProgress() : enabled_(isatty(STDERR_FILENO) == 1) {}
  ~ProbeProgress() { clear(); }
  ProbeProgress(const ProbeProgress&) = delete;
  ProbeProgress& operator=(const ProbeProgress&) = delete;

  void start(const char* phase, std::size_t total) {
    phase_ = phase;
    total_ = total;
    start_ = Clock::now();
    last_ = {};
  }
  void update(std::size_t done) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\rprobe: %s %zu/%zu, %.0f img/s\x1b[K", phase_, done, total_,
                 s > 0 ? static_cast<double>(done) / s : 0.0);
    shown_ = true;
  }
  void clear() {
    if (shown_) std::fputs("\r\x1b[K", stderr);
    shown_ = false;
  }

 private:
  const bool enabled_;
  const char* phase_ = "";
  std::size_t total_ = 0;
  Clock::time_point start_{};
  Clock::time_point last_{};
  bool shown_ = false;
};

// `limit` files spread evenly over the dataset (every k-th, so every class is in), or all.
std::vector<std::uint64_t> files_to_probe(std::uint64_t size, std::uint64_t limit) {
  const std::uint64_t n = limit == 0 || limit > size ? size : limit;
  std::vector<std::uint64_t> files(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    files[i] = static_cast<std::uint64_t>(static_cast<unsigned __int128>(i) * size / n);
  }
  return files;
}

// Reads every file once so that both timed passes find it in the page cache, and writes
// every page of the arena's slots, as a worker does in its first pass, so that they pay
// no page faults. Errors are left to the timed passes, which count them; so are files
// the workers would refuse unread (a FIFO, /dev/zero, a file over max_file_bytes).
void warm_up(const DatasetIndex& index, std::uint64_t max_file_bytes, const Arena& arena, ProbeReport& report,
             ProbeProgress& progress) {
  SampleReader reader(max_file_bytes);
  progress.start("reading", report.files.size());
  const auto start = Clock::now();
  for (std::size_t k = 0; k < report.files.size(); ++k) {
    auto bytes = reader.read(index.source(report.files[k]));
    if (bytes.ok()) report.bytes += bytes->size();
    progress.update(k + 1);
  }
  report.warm_s = seconds_since(start);
  const std::span<std::byte> slots = arena.slot_region();
  std::memset(slots.data(), 0, slots.size());
  report.slot_bytes = slots.size();
}

// One timed pass over `files` through a fresh pipeline taking `path`, as a worker runs
// it: the files in batches, batch b written into slot b mod slots.
void measure(const DatasetIndex& index, const std::vector<std::uint64_t>& files, const TransformSpec& spec,
             DecodePath path, std::uint64_t epoch, const Arena& arena, PathRun& run, ProbeProgress& progress,
             StageProfile* profile = nullptr) {
  SamplePipeline pipeline(spec, path);
  pipeline.profile_into(profile);
  const SlotGeometry& geometry = arena.control().slots;
  progress.start(run.name, files.size());
  const double cpu_start = thread_cpu_s();
  const auto start = Clock::now();
  for (std::size_t first = 0, batch = 0; first < files.size(); first += geometry.batch_size, ++batch) {
    const auto samples =
        std::span(files).subspan(first, std::min<std::size_t>(geometry.batch_size, files.size() - first));
    const SlotContents slot(arena, static_cast<std::uint32_t>(batch % geometry.num_slots));
    const std::uint32_t count = slot.prepare(samples, index, {});
    for (std::uint32_t k = 0; k < count; ++k) {
      const std::uint64_t i = slot.sample(k);
      // The sample's own index keys its crop and flip: both paths get the same boxes.
      const Status s = pipeline.run(index.source(i), epoch, i, slot.next_pixels());
      if (s.ok()) {
        slot.keep(k);
        ++run.decoded;
        continue;
      }
      slot.skip(k, s);
      if (run.failed++ == 0) run.first_error = s.about(printable(index.describe(i))).message();
    }
    progress.update(first + samples.size());
  }
  run.wall_s = seconds_since(start);
  run.cpu_s = thread_cpu_s() - cpu_start;
}

// --profile: three more passes of the fused path, each stage timed, into report.profile.
void profile_fused(const DatasetIndex& index, const TransformSpec& spec, const Arena& arena,
                   ProbeReport& report, ProbeProgress& progress) {
  constexpr int kPasses = 3;
  std::vector<StageProfile> profiles(kPasses);
  std::vector<double> walls;
  for (StageProfile& profile : profiles) {
    PathRun run("profile");
    measure(index, report.files, spec, DecodePath::kFused, report.options.epoch, arena, run, progress,
            &profile);
    walls.push_back(run.wall_s * 1e6 / static_cast<double>(report.files.size()));
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  report.profiled_us = median(walls);
  const auto samples = static_cast<double>(report.files.size());
  // Every pass adds the same stages in the same order (SamplePipeline::profile_into).
  for (std::size_t i = 0; i < profiles[0].stages().size(); ++i) {
    std::vector<double> us, ran;
    for (const StageProfile& profile : profiles) {
      const StageProfile::Stage& stage = profile.stages()[i];
      us.push_back(static_cast<double>(stage.ns) / 1e3 / samples);
      ran.push_back(static_cast<double>(stage.runs) / samples);
    }
    if (median(ran) > 0) report.profile.push_back({profiles[0].stages()[i].name, median(us), median(ran)});
  }
}

nlohmann::json path_json(const PathRun& run) {
  nlohmann::json j;
  j["images_per_s"] = run.images_per_s();
  j["images_per_cpu_s"] = run.images_per_cpu_s();
  j["decoded"] = run.decoded;
  j["failed"] = run.failed;
  j["wall_s"] = run.wall_s;
  j["cpu_s"] = run.cpu_s;
  j["first_error"] = run.first_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.first_error);
  return j;
}

std::string json_line(const ProbeReport& r) {
  const LoaderOptions& o = r.options;
  nlohmann::json j;
  j["probe"] = true;
  j["dataset_size"] = r.dataset_size;
  j["classes"] = r.classes;
  j["probed"] = r.files.size();
  j["bytes"] = r.bytes;
  j["warm_s"] = r.warm_s;
  j["slot_bytes"] = r.slot_bytes;
  write_reported_options(o, Reported::kRunAndProbe, j);  // tools/bench/option_flags.h's
  j["opencv"] = path_json(r.opencv);
  j["fused"] = path_json(r.fused);
  j["fused_over_opencv"] = r.ratio();
  if (!r.profile.empty()) {
    nlohmann::json stages = nlohmann::json::array();
    for (const ProfileRow& row : r.profile)
      stages.push_back({{"stage", row.stage}, {"us_per_sample", row.us_per_sample}, {"ran", row.ran}});
    j["profile"] = std::move(stages);
    j["profile_us_per_sample"] = r.profiled_us;
  }
  return j.dump();
}

void print_path(const PathRun& run, std::FILE* out) {
  std::fprintf(
      out, "%-12s %.1f images/s on one core, %.1f per CPU second (%llu decoded, %llu failed, %.3f s)\n",
      run.name, run.images_per_s(), run.images_per_cpu_s(), static_cast<unsigned long long>(run.decoded),
      static_cast<unsigned long long>(run.failed), run.wall_s);
  if (!run.first_error.empty())
    std::fprintf(out, "%-12s %s\n", "", ("first failure: " + printable(run.first_error)).c_str());
}

void print_human(const ProbeReport& r, std::FILE* out) {
  const LoaderOptions& o = r.options;
  const std::string classes = !o.image_folder.empty() || r.classes > 0
                                  ? ", " + std::to_string(r.classes) + " classes"
                                  : std::string();
  const std::string source = classes + " (" + printable(DatasetSource::of(o).describe()) + ")";
  std::fprintf(out, "%-12s %llu images%s\n", "dataset", static_cast<unsigned long long>(r.dataset_size),
               source.c_str());
  std::fprintf(out, "%-12s %zu files, %.1f MB, read once in %.3f s to warm the page cache\n", "probed",
               r.files.size(), static_cast<double>(r.bytes) / 1e6, r.warm_s);
  std::fprintf(out, "%-12s %s %ux%u %s, seed %llu, one thread\n", "transform", o.transform.c_str(), o.size,
               o.size, std::string(to_string(o.dtype)).c_str(), static_cast<unsigned long long>(o.seed));
  std::fprintf(
      out, "%-12s the slots of a loader's arena for --workers %u --prefetch %u --batch %u, %.1f MiB\n",
      "written to", o.workers, o.prefetch, o.batch_size, static_cast<double>(r.slot_bytes) / (1 << 20));
  print_path(r.opencv, out);
  print_path(r.fused, out);
  std::fprintf(out, "%-12s %.2fx\n", "fused/opencv", r.ratio());
  if (!r.profile.empty()) {
    std::fprintf(out, "%-12s the fused path, stage by stage: time per sample, median of 3 more passes\n",
                 "profile");
    std::fprintf(out, "  %-52s %10s %7s %7s\n", "stage", "us/sample", "share", "ran on");
    double sum = 0;
    for (const ProfileRow& row : r.profile) {
      std::fprintf(out, "  %-52s %10.1f %6.1f%% %6.1f%%\n", printable(row.stage).c_str(), row.us_per_sample,
                   100.0 * row.us_per_sample / r.profiled_us, 100.0 * row.ran);
      sum += row.us_per_sample;
    }
    std::fprintf(out, "  %-52s %10.1f %6.1f%%\n", "the stages together", sum, 100.0 * sum / r.profiled_us);
    std::fprintf(out, "  %-52s %10.1f %6.1f%%\n",
                 "the whole pass, per sample (the rest: the batches' own work)", r.profiled_us, 100.0);
  }
  std::fflush(out);
}

}  // namespace

int run_probe(const BenchFlags& flags) {
  if (!flags.plan) return fail(StreamPlan::of(flags.options).status().message());
  const StreamPlan& plan = *flags.plan;
  const LoaderOptions& o = plan.options();
  if (Status s = set_log_level(o.log_level); !s.ok()) return fail(s.message());
  follow_log_level_in_opencv(loader_logger()->level());
  Result<DatasetIndex> index = open_dataset(o, plan.schema());
  if (!index.ok()) return fail(index.status().message());

  ProbeReport report;
  report.options = o;
  report.dataset_size = index->size();
  report.classes = index->classes().size();
  report.files = files_to_probe(index->size(), flags.probe_limit);
  if (report.files.empty()) return fail("the dataset has no files to probe");

  const TransformSpec& spec = plan.transform();
  // The samples go where a loader's workers would write them, each to a new place in
  // memory. One reused buffer would stay in cache and spare the probe a cost no worker
  // is spared (for float32 224 x 224, 602 KB a sample, ~7% of a core).
  Result<ArenaSpec> arena_of = arena_spec(plan, *index, 1);
  if (!arena_of.ok()) return fail(arena_of.status().message());
  Result<std::shared_ptr<Arena>> arena = Arena::create(*arena_of, *index);
  if (!arena.ok()) return fail(arena.status().message());
  {
    ProbeProgress progress;
    warm_up(*index, o.max_file_bytes, **arena, report, progress);
    measure(*index, report.files, spec, DecodePath::kOpenCv, o.epoch, **arena, report.opencv, progress);
    measure(*index, report.files, spec, DecodePath::kFused, o.epoch, **arena, report.fused, progress);
    if (flags.profile) profile_fused(*index, spec, **arena, report, progress);
  }
  if (flags.json) {
    std::printf("%s\n", json_line(report).c_str());
    std::fflush(stdout);
  } else {
    print_human(report, stdout);
  }
  return 0;
}

}  // namespace forkfeed::bench
