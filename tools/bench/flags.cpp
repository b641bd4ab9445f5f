// forkfeed-bench's flags, declared with CLI11; the help text is the tool's manual. The flags
// that set loader options come from one table (tools/bench/option_flags.h).
#include "tools/bench/flags.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include <CLI/CLI.hpp>

#include "base/option_names.h"
#include "base/printable.h"
#include "tools/bench/option_flags.h"
#include "tools/cli/exit_status.h"
#include "tools/cli/integer_flag.h"
#include "tools/cli/seconds_flag.h"

namespace forkfeed::bench {
namespace {

constexpr const char* kDescription =
    "Measures the throughput of a forkfeed Loader on an image dataset.\n\n"
    "Runs E passes (epochs) over an ImageFolder tree, a manifest or WebDataset tar shards\n"
    "with N decode workers,\n"
    "reads every batch in place, and reports images/s, the time spent waiting for each\n"
    "batch (p50/p99), the shared memory arena, skipped samples and worker restarts. A\n"
    "live progress line is drawn when stdout is a terminal. --dump-indices writes the\n"
    "delivered order, one sample per line, so exactly-once can be checked from outside.\n"
    "--save-state and --resume checkpoint a run and continue it, with any worker count,\n"
    "so that both runs together deliver exactly the batches of one uninterrupted run.\n"
    "Ctrl-C stops after the current batch and prints the summary so far.\n\n"
    "--probe measures the single-core limit instead: in this process, on one thread, it\n"
    "reads every file once (to warm the page cache), then decodes and transforms every\n"
    "file with OpenCV's full decode (the reference) and again with the loader's fused\n"
    "path, with the same crops, and reports images/s per core for each and their ratio.\n"
    "Each sample is written where a worker would write it, into the slots of the arena a\n"
    "loader with the same --workers, --prefetch and --batch makes, so the probe pays the\n"
    "same cost of writing to memory. N workers cannot beat N x the fused rate;\n"
    "tools/compare.sh puts the two side by side. --profile adds where the fused path's\n"
    "time goes, stage by stage and op by op.\n";

constexpr const char* kFooter =
    "Examples:\n"
    "  forkfeed-mkdata --out /tmp/imgs --images 2000 --classes 10 --seed 1\n"
    "  forkfeed-bench --data /tmp/imgs --workers 8 --batch 128 --epochs 2\n"
    "  forkfeed-bench --manifest train.tsv --transform eval --dtype float32 --json\n"
    "  forkfeed-bench --shards '/data/train-{000000..000146}.tar' --workers 8\n"
    "  forkfeed-bench --data /tmp/imgs --no-shuffle --dump-indices order.tsv\n"
    "  forkfeed-bench --data /tmp/imgs --epochs 2 --stop-after-batches 5 --save-state s.json\n"
    "  forkfeed-bench --data /tmp/imgs --epochs 2 --resume s.json --workers 4\n"
    "  forkfeed-bench --data /tmp/imgs --probe --probe-limit 500 --transform eval\n"
    "  forkfeed-bench --data /tmp/imgs --probe --profile --transform \"RandomResizedCrop(224), "
    "TrivialAugmentWide(), Normalize()\"\n"
    "  forkfeed-bench --remote node1:7000,node2:7000 --dataset train --token-file token --overdue 5\n\n"
    "The dump has one line per delivered sample: epoch<TAB>batch<TAB>sample_index<TAB>label.\n"
    "Exit status: 0 done (or stopped by --stop-after-batches), 1 bad data, bad state or\n"
    "loader error, 2 bad arguments, 130 interrupted.";

// The flags that set how the tool runs, beside the loader's options.
void add_run_flags(CLI::App& app, BenchFlags& flags) {
  app.add_option("--epochs", flags.epochs, "Epochs in the whole schedule, a resumed run included")
      ->type_name("E")
      ->check(cli::integer_of(flags.epochs))
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}));
  app.add_flag("--fork-report", flags.fork_report,
               "Print what makes forking this process unsafe (RDMA, CUDA, threads) and exit");
  auto* probe =
      app.add_flag("--probe", flags.probe,
                   "Measure one core's decode + transform rate, OpenCV vs fused, and exit "
                   "(no workers; --transform, --size, --dtype, --seed apply, and --workers, --prefetch, "
                   "--batch size the arena the samples are written to)");
  app.add_option("--probe-limit", flags.probe_limit,
                 "Probe only N files, every k-th of the dataset so that every class is in "
                 "(default: all)")
      ->type_name("N")
      ->default_str("")  // 0 means "every file", which is no value to show
      ->check(cli::integer_of(flags.probe_limit))
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000'000}).description(""))
      ->needs(probe);
  app.add_flag("--profile", flags.profile,
               "With --probe: then three more passes of the fused path, timing each stage of a sample "
               "(the read, the decode, the resize, each op of the transform, the store), and a table of "
               "each stage's time per sample, the median of the three")
      ->needs(probe);
  app.add_option("--resume", flags.resume_path, "Continue from a state saved by --save-state")
      ->type_name("FILE");
  app.add_option("--save-state", flags.save_state_path,
                 "Write the loader's state to FILE (through FILE.tmp) when the run ends; FILE must be "
                 "a regular file or not exist (a FIFO, device or symbolic link is refused: name the "
                 "link's target instead)")
      ->type_name("FILE");
  app.add_option("--stop-after-batches", flags.stop_after_batches,
                 "End the run once it delivered K batches, across epochs (default: run the schedule)")
      ->type_name("K")
      ->default_str("")  // 0 means "no limit", which is no value to show
      ->check(cli::integer_of(flags.stop_after_batches))
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000'000}).description(""));
  app.add_option("--step-ms", flags.step_ms,
                 "Hold each batch MS milliseconds after reading it, the CPU idle, as a trainer whose step "
                 "runs on an accelerator would: shows whether batches keep coming while it computes "
                 "(the ideal rate is then batch / MS)")
      ->type_name("MS")
      ->check(cli::integer_of(flags.step_ms))
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{60'000}));
  app.add_flag("--json", flags.json, "Print only one JSON object on stdout");
  app.add_option("--dump-indices", flags.dump_path, "Write the delivered order to FILE")->type_name("FILE");
}

// The flags that read through forkfeedd, here or remote; --remote's text goes to `remote`.
CLI::Option* add_daemon_flags(CLI::App& app, BenchFlags& flags, std::string& remote) {
  app.add_option("--daemon", flags.daemon_socket,
                 "Read through the forkfeedd listening on SOCKET (forkfeed::Client) instead of an "
                 "in-process Loader")
      ->type_name("SOCKET");
  auto* remote_flag =
      app.add_option(
             "--remote", remote,
             "Read through the forkfeedd on another machine listening at HOST:PORT (its --listen), over "
             "UCX; needs --dataset and its token (--token-file). Several, comma-separated "
             "(HOST:PORT,HOST:PORT,...): one stream drawn from all of them at once, each serving the same "
             "--dataset with the same token; a daemon lost midway loses no batch, and each one's share "
             "is printed after the run")
          ->type_name("HOST:PORT[,...]")
          ->excludes("--daemon");
  app.add_option("--dataset", flags.dataset,
                 "With --daemon or --remote: a dataset named in forkfeedd's config, instead of --data, "
                 "--manifest or --shards")
      ->type_name("NAME");
  app.add_option("--token-file", flags.token_file,
                 "With --remote: the file with forkfeedd's token (default: $FORKFEED_TOKEN_FILE)")
      ->type_name("FILE");
  cli::add_seconds_flag(
      app, "--connect-timeout", flags.connect_timeout,
      "With --daemon or --remote: seconds to wait for forkfeedd to answer before giving up");
  cli::add_seconds_flag(app, "--overdue", flags.overdue,
                        "With --remote: a daemon that holds batches and delivered none for this long is "
                        "overdue, and its batches are asked of the other daemons too")
      ->type_name("SECONDS")
      ->needs(remote_flag);
  return remote_flag;
}

// HOST:PORT,HOST:PORT: each address once, none empty (a stray comma is a typo).
std::vector<std::string> remote_addresses(const std::string& remote) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t comma = remote.find(',', begin);
    std::string address =
        remote.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (address.empty()) {
      throw CLI::ValidationError("--remote", "an empty address in '" + printable(remote) +
                                                 "': give HOST:PORT, or several separated by single commas");
    }
    if (std::find(out.begin(), out.end(), address) != out.end()) {
      throw CLI::ValidationError("--remote", printable(address) + " is given twice: give each daemon once");
    }
    out.push_back(std::move(address));
    if (comma == std::string::npos) return out;
    begin = comma + 1;
  }
}

// One dataset, named in a way the run can read: `sources` of --data, --manifest, --shards given.
void check_dataset(const BenchFlags& flags, std::size_t sources) {
  if (!flags.dataset.empty() && flags.daemon_socket.empty() && flags.remote_addresses.empty()) {
    throw CLI::ValidationError("--dataset", "names a dataset of a forkfeedd: give --daemon or --remote too");
  }
  if (!flags.dataset.empty() && sources > 0) {
    throw CLI::ValidationError("--dataset", "give a dataset name or --data/--manifest/--shards, not both");
  }
  if (!flags.remote_addresses.empty() && flags.dataset.empty()) {
    throw CLI::RequiredError("--dataset NAME (a remote forkfeedd serves only its named datasets)");
  }
  if (sources == 0 && flags.dataset.empty() && !flags.fork_report) {
    throw CLI::RequiredError("--data DIR, --manifest FILE or --shards SPEC");
  }
}

// Values that are each fine but not together (--rank 3 --world-size 2) are bad arguments
// too, caught here rather than as a loader error; then the options take the size and
// dtype the transform makes, which the report shows, and the loader opens them resolved.
std::optional<int> check_options(BenchFlags& flags) {
  LoaderOptions& o = flags.options;
  auto plan = StreamPlan::of(o);
  if (!plan.ok() && !flags.fork_report && flags.dataset.empty()) {
    std::fprintf(stderr, "forkfeed-bench: %s (see --help)\n", printable(plan.status().message()).c_str());
    return cli::kExitBadArguments;
  }
  if (plan.ok()) {
    o = plan->options();
    flags.plan = std::move(plan).value();
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> parse_flags(int argc, char** argv, BenchFlags& flags) {
  CLI::App app(kDescription, "forkfeed-bench");
  app.option_defaults()->always_capture_default();
  app.get_formatter()->column_width(30);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "forkfeed-bench: " + std::string(e.what()) + " (see --help)\n";
  });
  app.footer(kFooter);
  add_option_flags(app, flags.options);  // the defaults shown are LoaderOptions' own
  CLI::Option* data = app.get_option("--data");
  CLI::Option* manifest = app.get_option("--manifest");
  CLI::Option* shards = app.get_option("--shards");
  data->excludes(manifest)->excludes(shards);
  manifest->excludes(shards);
  app.get_option("--log-level")
      ->check(
          CLI::IsMember({"trace", "debug", "info", "warn", "warning", "err", "error", "critical", "off"}));
  add_run_flags(app, flags);
  std::string remote;
  CLI::Option* remote_flag = add_daemon_flags(app, flags, remote);
  try {
    app.parse(argc, argv);
    if (remote_flag->count() > 0) flags.remote_addresses = remote_addresses(remote);
    check_dataset(flags, data->count() + manifest->count() + shards->count());
  } catch (const CLI::ParseError& e) {
    return cli::parse_exit(app, e);
  }
  return check_options(flags);
}

}  // namespace forkfeed::bench
