// forkfeed-bench's flags, declared with CLI11; the help text is the tool's manual.
#include "tools/bench/flags.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include <CLI/CLI.hpp>

#include "base/option_names.h"
#include "base/printable.h"
#include "tools/cli/exit_status.h"
#include "tools/cli/integer_flag.h"
#include "tools/cli/seconds_flag.h"

namespace forkfeed::bench {

std::optional<int> parse_flags(int argc, char** argv, BenchFlags& flags) {
  CLI::App app(
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
      "tools/compare.sh puts the two side by side.\n",
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
      "  forkfeed-bench --shards '/data/train-{000000..000146}.tar' --workers 8\n"
      "  forkfeed-bench --data /tmp/imgs --no-shuffle --dump-indices order.tsv\n"
      "  forkfeed-bench --data /tmp/imgs --epochs 2 --stop-after-batches 5 --save-state s.json\n"
      "  forkfeed-bench --data /tmp/imgs --epochs 2 --resume s.json --workers 4\n"
      "  forkfeed-bench --data /tmp/imgs --probe --probe-limit 500 --transform eval\n"
      "  forkfeed-bench --remote node1:7000,node2:7000 --dataset train --token-file token --overdue 5\n\n"
      "The dump has one line per delivered sample: epoch<TAB>batch<TAB>sample_index<TAB>label.\n"
      "Exit status: 0 done (or stopped by --stop-after-batches), 1 bad data, bad state or\n"
      "loader error, 2 bad arguments, 130 interrupted.");

  LoaderOptions& o = flags.options;
  // The defaults shown in --help are LoaderOptions' own.
  std::string dtype(to_string(o.dtype));
  std::string on_error(to_string(o.on_error));
  std::string start_method(to_string(o.start_method));
  std::string fork_hazard(to_string(o.fork_hazard));
  std::string shard_label(to_string(o.shard_label));
  std::string layout(to_string(o.layout));
  bool no_shuffle = false;
  auto* data =
      app.add_option("--data", o.image_folder, "ImageFolder root: one subfolder per class")->type_name("DIR");
  auto* manifest = app.add_option("--manifest", o.manifest, "Text file of 'relative/path<TAB>label' lines")
                       ->type_name("FILE");
  auto* shards =
      app.add_option("--shards", o.shards,
                     "WebDataset tar shards: a brace pattern ('train-{000000..000146}.tar', quoted), a folder "
                     "of .tar files, or a text file listing them; indexed once, the index cached in "
                     "$FORKFEED_CACHE_DIR (default $XDG_CACHE_HOME/forkfeed)")
          ->type_name("SPEC");
  data->excludes(manifest)->excludes(shards);
  manifest->excludes(shards);
  app.add_option("--shard-label", shard_label,
                 "With --shards, where a sample's label is: cls (a <key>.cls member holding an integer), json "
                 "(a field of <key>.json, see --shard-label-field) or class_folder (the folder part of the key)")
      ->check(CLI::IsMember(enum_names<ShardLabel>()));
  app.add_option("--shard-label-field", o.shard_label_field, "With --shard-label json: the JSON field")
      ->type_name("NAME");
  app.add_option("--workers", o.workers, "Decode worker processes")
      ->type_name("N")
      ->check(cli::option_integer("workers", o.workers));
  app.add_option("--batch", o.batch_size, "Samples per batch")
      ->type_name("B")
      ->check(cli::option_integer("batch_size", o.batch_size));
  app.add_option("--epochs", flags.epochs, "Epochs in the whole schedule, a resumed run included")
      ->type_name("E")
      ->check(cli::integer_of(flags.epochs))
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}));
  app.add_option("--transform", o.transform,
                 "train (RandomResizedCrop + flip), eval (Resize + CenterCrop), or a pipeline of "
                 "torchvision's ops in one quoted argument, e.g. \"RandomResizedCrop(176), "
                 "RandomHorizontalFlip(), TrivialAugmentWide(), Normalize(), RandomErasing(0.1)\"")
      ->capture_default_str();
  app.add_option("--size", o.size,
                 "Output height and width in pixels; 0: the transform's (224 for train and eval)")
      ->type_name("S")
      ->check(cli::option_integer("size", o.size));
  app.add_option("--dtype", dtype, "uint8, or float32 normalised ((x / 255 - mean) / std)")
      ->check(CLI::IsMember(enum_names<DType>()));
  app.add_option("--layout", layout,
                 "nhwc (channels last), nchw (one plane per channel), or auto: nhwc for uint8, nchw for float32")
      ->check(CLI::IsMember(enum_names<Layout>()));
  app.add_option("--seed", o.seed, "Seed of the shuffle and of the random crops")
      ->type_name("X")
      ->check(cli::option_integer("seed", o.seed));
  app.add_option("--rank", o.rank, "This process's rank")
      ->type_name("R")
      ->check(cli::option_integer("rank", o.rank));
  app.add_option("--world-size", o.world_size, "Number of ranks sharing the dataset")
      ->type_name("W")
      ->check(cli::option_integer("world_size", o.world_size));
  app.add_option("--prefetch", o.prefetch, "Batches in flight per worker")
      ->type_name("P")
      ->check(cli::option_integer("prefetch", o.prefetch));
  app.add_flag("--drop-last", o.drop_last, "Drop the last partial batch and the rank remainder");
  app.add_flag("--no-shuffle", no_shuffle, "Deliver samples in index order");
  app.add_option("--on-error", on_error, "A file that cannot be decoded: fail the run, or skip the sample")
      ->check(CLI::IsMember(enum_names<OnError>()));
  app.add_option("--start-method", start_method,
                 "fork: copy this process; spawn: exec forkfeed-worker; auto: fork unless a fork hazard "
                 "(RDMA, CUDA, threads) is found (dead workers are always respawned)")
      ->check(CLI::IsMember(enum_names<StartMethod>()));
  app.add_option("--fork-hazard", fork_hazard, "With --start-method fork and a hazard: warn, error or ignore")
      ->check(CLI::IsMember(enum_names<ForkHazardPolicy>()));
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
  app.add_option("--max-worker-restarts", o.max_worker_restarts, "Worker deaths survived before failing")
      ->type_name("N")
      ->check(cli::option_integer("max_worker_restarts", o.max_worker_restarts));
  app.add_option("--task-timeout", o.task_timeout_ms, "Kill a worker busy on one sample this long; 0: never")
      ->type_name("MS")
      ->check(cli::option_integer("task_timeout_ms", o.task_timeout_ms));
  app.add_option("--max-file-bytes", o.max_file_bytes,
                 "Refuse image files larger than this, before reading them, as bad data (--on-error)")
      ->type_name("BYTES")
      ->check(cli::option_integer("max_file_bytes", o.max_file_bytes));
  app.add_option("--pin-memory-device", o.pin_memory_device,
                 "Page-lock the batch slots for this CUDA device (falls back to ordinary memory "
                 "without CUDA); -1: off")
      ->type_name("N")
      ->check(cli::option_integer("pin_memory_device", o.pin_memory_device));
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
  app.add_option("--log-level", o.log_level, "Log level (default: $FORKFEED_LOG_LEVEL, else info)")
      ->type_name("LEVEL")
      ->check(
          CLI::IsMember({"trace", "debug", "info", "warn", "warning", "err", "error", "critical", "off"}));
  app.add_flag("--json", flags.json, "Print only one JSON object on stdout");
  app.add_option("--dump-indices", flags.dump_path, "Write the delivered order to FILE")->type_name("FILE");
  app.add_option("--daemon", flags.daemon_socket,
                 "Read through the forkfeedd listening on SOCKET (forkfeed::Client) instead of an "
                 "in-process Loader")
      ->type_name("SOCKET");
  std::string remote;
  auto* remote_flag =
      app.add_option("--remote", remote,
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
  cli::add_seconds_flag(app, "--connect-timeout", flags.connect_timeout,
                        "With --daemon or --remote: seconds to wait for forkfeedd to answer before giving up");
  cli::add_seconds_flag(app, "--overdue", flags.overdue,
                        "With --remote: a daemon that holds batches and delivered none for this long is "
                        "overdue, and its batches are asked of the other daemons too")
      ->type_name("SECONDS")
      ->needs(remote_flag);

  try {
    app.parse(argc, argv);
    if (remote_flag->count() > 0) {
      // HOST:PORT,HOST:PORT: each address once, none empty (a stray comma is a typo).
      std::size_t begin = 0;
      for (;;) {
        const std::size_t comma = remote.find(',', begin);
        std::string address = remote.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
        if (address.empty()) {
          throw CLI::ValidationError("--remote", "an empty address in '" + printable(remote) +
                                                     "': give HOST:PORT, or several separated by single commas");
        }
        if (std::find(flags.remote_addresses.begin(), flags.remote_addresses.end(), address) !=
            flags.remote_addresses.end()) {
          throw CLI::ValidationError("--remote", printable(address) + " is given twice: give each daemon once");
        }
        flags.remote_addresses.push_back(std::move(address));
        if (comma == std::string::npos) break;
        begin = comma + 1;
      }
    }
    const std::size_t sources = data->count() + manifest->count() + shards->count();
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
  } catch (const CLI::ParseError& e) {
    return cli::parse_exit(app, e);
  }
  // The IsMember checks above admit only names these parsers know.
  const std::optional<DType> type = parse_dtype(dtype);
  const std::optional<OnError> error_policy = parse_on_error(on_error);
  const std::optional<StartMethod> method = parse_start_method(start_method);
  const std::optional<ForkHazardPolicy> hazard_policy = parse_fork_hazard(fork_hazard);
  const std::optional<ShardLabel> label = parse_shard_label(shard_label);
  const std::optional<Layout> pixel_layout = parse_layout(layout);
  if (!type || !error_policy || !method || !hazard_policy || !label || !pixel_layout) {
    std::fprintf(stderr,
                 "forkfeed-bench: unknown --dtype %s, --on-error %s or --start-method %s\n", dtype.c_str(),
                 on_error.c_str(), start_method.c_str());
    return cli::kExitBadArguments;
  }
  o.dtype = *type;
  o.on_error = *error_policy;
  o.start_method = *method;
  o.fork_hazard = *hazard_policy;
  o.shard_label = *label;
  o.layout = *pixel_layout;
  o.shuffle = !no_shuffle;
  // Values that are each fine but not together (--rank 3 --world-size 2) are bad
  // arguments too, caught here rather than as a loader error.
  auto resolved = ResolvedOptions::of(o);
  if (!resolved.ok() && !flags.fork_report && flags.dataset.empty()) {
    std::fprintf(stderr, "forkfeed-bench: %s (see --help)\n", printable(resolved.status().message()).c_str());
    return cli::kExitBadArguments;
  }
  // What the report shows (the size and dtype the transform makes) and the loader opens.
  if (resolved.ok()) {
    o = resolved->options();
    flags.resolved = std::move(resolved).value();
  }
  return std::nullopt;
}

}  // namespace forkfeed::bench
