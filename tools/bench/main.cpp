// forkfeed-bench: measures how fast a Loader delivers batches, and can dump the delivered
// sample order and save or resume the loader's state, so that exactly-once, ordering and
// exact resume can be checked from outside.
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/printable.h"
#include "forkfeed/client.h"
#include "forkfeed/fork_safety.h"
#include "forkfeed/loader.h"
#include "loader/loader_internals.h"
#include "tools/bench/flags.h"
#include "tools/bench/probe.h"
#include "tools/bench/progress_line.h"
#include "tools/bench/report.h"
#include "tools/bench/state_file.h"
#include "tools/cli/exit_status.h"

namespace forkfeed::bench {
namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_interrupted = 0;
// The running in-process Loader or forkfeedd stream, if any: Ctrl-C interrupts its wait
// for a batch, which a stopped (SIGSTOP) or stuck worker would otherwise make endless.
std::atomic<Loader*> g_loader = nullptr;
std::atomic<Client*> g_client = nullptr;
// Stores what the page touches read, so the compiler cannot drop the reads.
volatile std::uint64_t g_touch_sink = 0;

void on_sigint(int) {
  g_interrupted = 1;
  if (Loader* loader = g_loader.load()) loader->interrupt();
  if (Client* client = g_client.load()) client->interrupt();
}

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
std::uint64_t touch_pages(std::span<const std::byte> bytes) {
  std::uint64_t sum = 0;
  for (std::size_t offset = 0; offset < bytes.size(); offset += 4096)
    sum += std::to_integer<unsigned>(bytes[offset]);
  return sum;
}

// The bytes a field holds for its batch: a dense field's values, or a ragged one's, which
// lie back to back from its first sample's to its last's.
std::span<const std::byte> field_bytes(const FieldView& field) {
  if (field.size() == 0) return {};
  if (!field.ragged())
    return {static_cast<const std::byte*>(field.data()), field.size() * field.sample_bytes()};
  const std::span<const std::byte> last = field.bytes(field.size() - 1);
  return {field.bytes(0).data(), last.data() + last.size()};
}

// Touches the batch's pages as a trainer reading it would, and adds what each field holds
// to `report` (with --fields); returns the touched bytes' checksum.
std::uint64_t read_batch(const Batch& batch, RunReport& report) {
  if (batch.fields().empty())
    return touch_pages({static_cast<const std::byte*>(batch.data()), batch.bytes()});
  if (report.field_bytes.empty()) {
    for (const FieldView& field : batch.fields())
      report.field_bytes.push_back({std::string(field.name()), 0});
  }
  std::uint64_t sum = 0;
  for (std::size_t f = 0; f < batch.fields().size(); ++f) {
    const std::span<const std::byte> bytes = field_bytes(batch.fields()[f]);
    sum += touch_pages(bytes);
    report.field_bytes[f].bytes += bytes.size();
  }
  return sum;
}

// Runs passes until the loader's epoch reaches flags.epochs (a resumed loader starts
// wherever its state points), filling the measured part of `report`. Stops early after
// --stop-after-batches (report.stopped), on Ctrl-C (report.interrupted) or at the first
// failed batch, whose Status it returns. `Source`: a Loader, or a Client of forkfeedd.
template <typename Source>
Status run_passes(Source& loader, const BenchFlags& flags, IndexDump& dump, RunReport& report) {
  ProgressLine progress(flags.epochs, loader.batches_per_epoch(), !flags.json);
  std::uint64_t checksum = 0;
  Status status;
  const auto start = Clock::now();
  // The loader's epoch moves on only at the first next() of the following pass.
  for (std::uint64_t epoch = loader.epoch(); epoch < flags.epochs && !report.stopped && status.ok();
       ++epoch) {
    if (g_interrupted) break;
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
      checksum += read_batch(batch, report);
      if (flags.step_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(flags.step_ms));
      dump.write(batch);
      report.images += batch.size();
      ++report.batches;
      progress.update(batch.epoch(), batch.index(), report.images);
      report.stopped = report.batches == flags.stop_after_batches;
      if (g_interrupted || report.stopped) break;
    }
  }
  report.wall_s = seconds_since(start);
  g_touch_sink = checksum;
  progress.finish();
  report.interrupted = g_interrupted != 0;
  return status;
}

// Opens the loader, from the --resume state if there is one. The loader's refusal of a
// state already says what differs ("the state was taken with batch_size 5 but ...").
Result<std::unique_ptr<Loader>> open_loader(const BenchFlags& flags) {
  std::string state;
  if (!flags.resume_path.empty()) {
    Result<std::string> saved = read_state_file(flags.resume_path);
    if (!saved.ok()) return saved.status();
    state = std::move(saved).value();
  }
  // Options the flags could not resolve (a --dataset without --daemon) say why here.
  if (!flags.plan) return Loader::open(flags.options, state);
  return LoaderInternals::open(*flags.plan, state, nullptr);
}

// A stream on the forkfeedd at --daemon, or on the remote ones of --remote, from the --resume state if there
// is one.
Result<std::unique_ptr<Client>> open_client(const BenchFlags& flags) {
  StreamOptions options;
  options.loader = flags.options;
  options.connect_timeout = flags.connect_timeout;
  options.overdue = flags.overdue;
  options.dataset = flags.dataset;
  std::string state;
  if (!flags.resume_path.empty()) {
    Result<std::string> saved = read_state_file(flags.resume_path);
    if (!saved.ok()) return saved.status();
    state = std::move(saved).value();
  }
  if (!flags.remote_addresses.empty()) {
    std::vector<RemoteDaemon> daemons;
    for (const std::string& address : flags.remote_addresses) daemons.push_back({address, flags.token_file});
    return Client::connect(daemons, options, state);
  }
  return Client::connect(flags.daemon_socket, options, state);
}

int run(const BenchFlags& flags) {
  IndexDump dump;
  if (!flags.dump_path.empty()) {
    if (Status s = dump.open(flags.dump_path); !s.ok()) return fail(s.message());
  }
  if (!flags.save_state_path.empty()) {
    if (Status s = check_state_destination(flags.save_state_path); !s.ok()) return fail(s.message());
  }
  install_sigint_handler();

  RunReport report;
  report.options = flags.options;
  report.epochs_requested = flags.epochs;
  report.resumed_from = flags.resume_path;
  report.served_dataset = flags.dataset;
  const auto open_start = Clock::now();
  Status status;
  std::string state;
  if (!flags.daemon_socket.empty() || !flags.remote_addresses.empty()) {  // the same run through forkfeedd
    Result<std::unique_ptr<Client>> opened = open_client(flags);
    if (!opened.ok()) return fail(opened.status().message());
    std::unique_ptr<Client> client = std::move(opened).value();
    report.startup_s = seconds_since(open_start);
    report.dataset_size = client->dataset_size();
    report.classes = client->classes();
    report.start_epoch = client->epoch();
    g_client = client.get();
    status = run_passes(*client, flags, dump, report);
    g_client = nullptr;
    if (auto stats = client->stats(); stats.ok()) report.stats = *stats;
    report.daemons = client->daemons();
    report.options.workers = client->workers();
    state = client->state();
  } else {
    Result<std::unique_ptr<Loader>> opened = open_loader(flags);
    if (!opened.ok()) return fail(opened.status().message());
    std::unique_ptr<Loader> loader = std::move(opened).value();
    report.startup_s = seconds_since(open_start);
    report.dataset_size = loader->dataset().size();
    report.classes = loader->dataset().classes().size();
    report.start_epoch = loader->epoch();
    g_loader = loader.get();
    status = run_passes(*loader, flags, dump, report);
    g_loader = nullptr;
    report.stats = loader->stats();
    state = loader->state();
    loader.reset();  // stops and reaps the workers before anything is reported
  }
  // A Ctrl-C from the terminal reaches the whole process group; an error that follows
  // it is part of stopping, not a result. A wait it cut short changed nothing, so the
  // state is exact. A batch failed by its own bad data moved the pass past it (its good
  // samples are lost to a resume, so no state is saved); any other failure (the
  // machine's, a changed shard) stopped the loader at that batch, where the state resumes.
  const bool stopped_cleanly = status.ok() || status.code() == Status::Code::kCancelled;
  const bool state_resumes_exactly = stopped_cleanly || status.code() != Status::Code::kBadData;
  if (!flags.save_state_path.empty() && state_resumes_exactly) {
    if (Status s = write_state_file(flags.save_state_path, state); !s.ok()) return fail(s.message());
    report.saved_state = flags.save_state_path;
  }
  if (!stopped_cleanly && !report.interrupted) {
    return fail(status.message() +
                (report.saved_state.empty()
                     ? ""
                     : "; the state to resume from that batch is saved in " + printable(report.saved_state)));
  }
  if (Status s = dump.close(); !s.ok()) return fail(s.message());

  if (flags.json) {
    std::printf("%s\n", json_line(report).c_str());
    std::fflush(stdout);
  } else {
    print_human(report, stdout);
  }
  return report.interrupted ? cli::kExitInterrupted : cli::kExitOk;
}

}  // namespace
}  // namespace forkfeed::bench

int main(int argc, char** argv) {
  forkfeed::bench::BenchFlags flags;
  if (std::optional<int> code = forkfeed::bench::parse_flags(argc, argv, flags)) return *code;
  if (flags.fork_report) {
    std::printf("%s\n", forkfeed::ForkSafety::assess().describe().c_str());
    return 0;
  }
  if (flags.probe) return forkfeed::bench::run_probe(flags);
  return forkfeed::bench::run(flags);
}
