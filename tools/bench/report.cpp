// RunReport rendering: the human summary and the --json line of forkfeed-bench.
#include "tools/bench/report.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "base/printable.h"
#include "client/remote/daemon_stats_fields.h"
#include "dataset/dataset_source.h"
#include "protocol/stream_request.h"
#include "tools/bench/option_flags.h"
#include "tools/cli/exit_status.h"
#include "transport/arena_layout.h"

namespace forkfeed::bench {
namespace {

double images_per_s(const RunReport& r) {
  return r.wall_s > 0 ? static_cast<double>(r.images) / r.wall_s : 0.0;
}

double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

void line(std::FILE* out, const char* name, const std::string& value) {
  std::fprintf(out, "%-12s %s\n", name, value.c_str());
}

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  const int n = std::snprintf(nullptr, 0, fmt, args...);
  if (n <= 0) return {};
  std::string s(static_cast<std::size_t>(n), '\0');
  std::snprintf(s.data(), s.size() + 1, fmt, args...);
  return s;
}

unsigned long long ull(std::uint64_t v) { return static_cast<unsigned long long>(v); }

// Samples whose pixels a remote daemon delivered: its bytes over one sample's (samples it
// skipped are not in them).
double daemon_images(const RunReport& r, const RemoteDaemonStats& d) {
  const std::size_t per_sample = sample_bytes(r.options.dtype, r.options.size);
  return per_sample > 0 ? static_cast<double>(d.bytes) / static_cast<double>(per_sample) : 0.0;
}

// Mean time from asking a daemon for a batch to its arrival.
double mean_wait_ms(const RemoteDaemonStats& d) {
  return d.batches > 0 ? static_cast<double>(d.wait_ns) / 1e6 / static_cast<double>(d.batches) : 0.0;
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const std::size_t k = std::clamp<std::size_t>(static_cast<std::size_t>(rank), 1, values.size()) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

void print_human(const RunReport& r, std::FILE* out) {
  const LoaderOptions& o = r.options;
  const DatasetSource source = DatasetSource::of(o);
  const std::string classes =
      !o.image_folder.empty() || r.classes > 0 ? format(", %zu classes", r.classes) : std::string();
  const std::string where =
      r.served_dataset.empty() ? source.describe() : "'" + r.served_dataset + "' of forkfeedd";
  line(out, "dataset", format("%llu images%s (%s)", ull(r.dataset_size), classes.c_str(), where.c_str()));
  if (o.world_size > 1) line(out, "rank", format("%u of %u", o.rank, o.world_size));
  line(out, "workers",
       format("%u (%s, prefetch %u)", o.workers, std::string(to_string(r.stats.start_method)).c_str(),
              o.prefetch));
  line(out, "restarts", format("%llu (at most %u)", ull(r.stats.worker_restarts), o.max_worker_restarts));
  line(out, "batch", format("%u%s", o.batch_size, o.drop_last ? " (drop last)" : ""));
  line(out, "transform",
       format("%s %ux%u %s%s", o.transform.c_str(), o.size, o.size, std::string(to_string(o.dtype)).c_str(),
              o.shuffle ? "" : ", no shuffle"));
  line(out, "images", format("%llu", ull(r.images)));
  line(out, "batches", format("%llu", ull(r.batches)));
  std::string notes;  // ", a, b" then shown as " (a, b)"
  if (r.start_epoch > 0) notes += format(", from epoch %llu", ull(r.start_epoch));
  if (r.stopped) notes += format(", stopped after %llu batches", ull(r.batches));
  if (r.interrupted) notes += ", interrupted";
  if (!notes.empty()) notes = " (" + notes.substr(2) + ")";
  line(out, "epochs", format("%llu of %llu", ull(r.epochs), ull(r.epochs_requested)) + notes);
  line(out, "startup", format("%.3f s", r.startup_s));
  line(out, "wall time", format("%.3f s", r.wall_s));
  line(out, "images/s", format("%.1f", images_per_s(r)));
  line(out, "wait/batch",
       format("p50 %.3f ms, p99 %.3f ms", percentile(r.wait_ms, 50), percentile(r.wait_ms, 99)));
  line(out, "arena",
       format("%.1f MiB, %u slots; index %.1f MiB (%.1f bytes a sample)", mib(r.stats.arena_bytes),
              r.stats.slots, mib(r.stats.index_bytes),
              r.dataset_size ? static_cast<double>(r.stats.index_bytes) / static_cast<double>(r.dataset_size)
                             : 0.0));
  if (r.stats.pinned) {
    line(out, "pinned", format("yes, for CUDA device %d", o.pin_memory_device));
  } else {
    line(out, "pinned",
         o.pin_memory_device < 0
             ? std::string("no")
             : format("no, ordinary memory (CUDA device %d: the log says why)", o.pin_memory_device));
  }
  const std::string bytes = r.stats.skipped_bytes > 0
                                ? format(", and %llu bytes of damaged shards", ull(r.stats.skipped_bytes))
                                : "";
  line(out, "skipped",
       format("%llu%s (on error %s)", ull(r.stats.skipped_samples), bytes.c_str(),
              std::string(to_string(o.on_error)).c_str()));
  for (std::size_t f = 0; f < r.field_bytes.size(); ++f) {  // --fields: one line per field
    const RunReport::FieldBytes& field = r.field_bytes[f];
    line(out, f == 0 ? "fields" : "",
         format("%s %.2f MB, %.1f bytes a sample", printable(field.name).c_str(),
                static_cast<double>(field.bytes) / 1e6,
                r.images ? static_cast<double>(field.bytes) / static_cast<double>(r.images) : 0.0));
  }
  for (std::size_t i = 0; i < r.daemons.size(); ++i) {
    // One line per remote daemon: its share of the run, and whether it held out.
    const RemoteDaemonStats& d = r.daemons[i];
    std::string state = d.up ? "up" : "down";
    if (d.stalled) state += ", overdue";
    std::string extra;
    if (d.duplicates > 0) extra += format(", %llu duplicates dropped", ull(d.duplicates));
    if (!d.last_error.empty()) extra += ", last lost: " + d.last_error;
    line(out, i == 0 ? "daemons" : "",
         format(
             "%s: %llu batches, %.1f MB, %.1f images/s, mean wait %.3f ms, %llu reassigned, %llu losses (%s)",
             printable(d.address).c_str(), ull(d.batches), static_cast<double>(d.bytes) / 1e6,
             r.wall_s > 0 ? daemon_images(r, d) / r.wall_s : 0.0, mean_wait_ms(d), ull(d.reassigned),
             ull(d.losses), state.c_str()) +
             printable(extra));
  }
  if (!r.resumed_from.empty()) line(out, "resumed", "from " + printable(r.resumed_from));
  if (!r.saved_state.empty()) line(out, "state", "saved to " + printable(r.saved_state));
  std::fflush(out);
}

std::string json_line(const RunReport& r) {
  nlohmann::json j;
  j["images"] = r.images;
  j["batches"] = r.batches;
  j["epochs"] = r.epochs;
  j["epochs_requested"] = r.epochs_requested;
  j["interrupted"] = r.interrupted;
  j["stopped"] = r.stopped;
  j["start_epoch"] = r.start_epoch;
  j["resumed"] = !r.resumed_from.empty();
  j["saved_state"] = r.saved_state.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.saved_state);
  j["startup_s"] = r.startup_s;
  j["wall_s"] = r.wall_s;
  j["images_per_s"] = images_per_s(r);
  j["wait_p50_ms"] = percentile(r.wait_ms, 50);
  j["wait_p99_ms"] = percentile(r.wait_ms, 99);
  write_loader_stats(r.stats, j);          // every LoaderStats field, by its name (loader/stats_fields.h)
  j["skipped"] = r.stats.skipped_samples;  // at indexing and decoding; skipped_samples' older name
  j["dataset_size"] = r.dataset_size;
  j["classes"] = r.classes;
  write_reported_options(r.options, Reported::kRun, j);  // tools/bench/option_flags.h's
  if (!r.field_bytes.empty()) {                          // --fields: the bytes each field delivered
    nlohmann::json fields = nlohmann::json::object();
    for (const RunReport::FieldBytes& field : r.field_bytes) fields[field.name] = field.bytes;
    j["field_bytes"] = std::move(fields);
  }
  if (!r.daemons.empty()) {  // --remote: what each remote forkfeedd delivered
    nlohmann::json daemons = nlohmann::json::array();
    for (const RemoteDaemonStats& d : r.daemons) {
      nlohmann::json daemon;
      for_each_daemon_stat(d, [&](const char* key, const auto& value) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, std::string>) {
          daemon[key] = printable(value);
        } else {
          daemon[key] = value;
        }
      });
      daemon["images"] = daemon_images(r, d);
      daemon["images_per_s"] = r.wall_s > 0 ? daemon_images(r, d) / r.wall_s : 0.0;
      daemon["mean_wait_ms"] = mean_wait_ms(d);
      daemons.push_back(std::move(daemon));
    }
    j["daemons"] = std::move(daemons);
  }
  return j.dump();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int fail(const std::string& message) {
  std::fprintf(stderr, "forkfeed-bench: %s\n", printable(message).c_str());
  return cli::kExitFailed;
}

}  // namespace forkfeed::bench
