// forkfeed-bench's option flags and the options its --json line reports, from one table.
#include "tools/bench/option_flags.h"

#include <array>
#include <string>
#include <type_traits>

#include "base/option_names.h"
#include "plan/option_fields.h"
#include "tools/cli/integer_flag.h"

namespace forkfeed::bench {
namespace {

using enum Reported;

constexpr std::array kOptionFlags = {
    OptionFlag{"image_folder", "--data", "DIR", "ImageFolder root: one subfolder per class", kNo},
    OptionFlag{"manifest", "--manifest", "FILE", "Text file of 'relative/path<TAB>label' lines", kNo},
    OptionFlag{
        "shards", "--shards", "SPEC",
        "WebDataset tar shards: a brace pattern ('train-{000000..000146}.tar', quoted), a folder of .tar "
        "files, or a text file listing them; indexed once, the index cached in $FORKFEED_CACHE_DIR "
        "(default $XDG_CACHE_HOME/forkfeed)",
        kNo},
    OptionFlag{
        "shard_label", "--shard-label", "",
        "With --shards, where a sample's label is: cls (a <key>.cls member holding an integer), json (a "
        "field of <key>.json, see --shard-label-field) or class_folder (the folder part of the key)",
        kNo},
    OptionFlag{"shard_label_field", "--shard-label-field", "NAME", "With --shard-label json: the JSON field",
               kNo},
    OptionFlag{"fields", "--fields", "SPEC",
               "With --shards, the named fields of each sample and the member extensions each is read from, "
               "in one quoted argument: \"image=jpg;png, caption=txt, label=cls, emb=npy\" (kinds and forms "
               "as docs/datasets.md gives them); the report gives the bytes each field delivered",
               kRun},
    OptionFlag{"missing", "--missing", "",
               "With --fields, a sample that lacks one: error (bad data, as --on-error says), skip (left out "
               "and counted) or empty (an empty value, flagged)",
               kRun},
    OptionFlag{"content_check", "--content-check", "",
               "What of each sample the dataset's identity reads while indexing (a resumed state and a "
               "fan-in compare it): windows (a file or member up to 16 KiB whole, a larger one's first and "
               "last 4 KiB) or full (every byte)",
               kRun},
    OptionFlag{"workers", "--workers", "N", "Decode worker processes", kRun},
    OptionFlag{"batch_size", "--batch", "B", "Samples per batch", kRun},
    OptionFlag{
        "transform", "--transform", "",
        "train (RandomResizedCrop + flip), eval (Resize + CenterCrop), or a pipeline of torchvision's ops "
        "in one quoted argument, e.g. \"RandomResizedCrop(176), RandomHorizontalFlip(), "
        "TrivialAugmentWide(), Normalize(), RandomErasing(0.1)\"",
        kRunAndProbe},
    OptionFlag{"size", "--size", "S",
               "Output height and width in pixels; 0: the transform's (224 for train and eval)",
               kRunAndProbe},
    OptionFlag{"dtype", "--dtype", "", "uint8, or float32 normalised ((x / 255 - mean) / std)", kRunAndProbe},
    OptionFlag{
        "layout", "--layout", "",
        "nhwc (channels last), nchw (one plane per channel), or auto: nhwc for uint8, nchw for float32", kNo},
    OptionFlag{"seed", "--seed", "X", "Seed of the shuffle and of the random crops", kRunAndProbe},
    OptionFlag{"rank", "--rank", "R", "This process's rank", kRun},
    OptionFlag{"world_size", "--world-size", "W", "Number of ranks sharing the dataset", kRun},
    OptionFlag{"prefetch", "--prefetch", "P", "Batches in flight per worker", kRun},
    OptionFlag{"drop_last", "--drop-last", "", "Drop the last partial batch and the rank remainder", kRun},
    OptionFlag{"shuffle", "--no-shuffle", "", "Deliver samples in index order", kRun},
    OptionFlag{"on_error", "--on-error", "",
               "A file that cannot be decoded: fail the run, or skip the sample", kRun},
    OptionFlag{"start_method", "--start-method", "",
               "fork: copy this process; spawn: exec forkfeed-worker; auto: fork unless a fork hazard (RDMA, "
               "CUDA, threads) is found (dead workers are always respawned)",
               kNo},
    OptionFlag{"fork_hazard", "--fork-hazard", "",
               "With --start-method fork and a hazard: warn, error or ignore", kNo},
    OptionFlag{"max_worker_restarts", "--max-worker-restarts", "N", "Worker deaths survived before failing",
               kRun},
    OptionFlag{"task_timeout_ms", "--task-timeout", "MS",
               "Kill a worker busy on one sample this long; 0: never", kRun},
    OptionFlag{"max_file_bytes", "--max-file-bytes", "BYTES",
               "Refuse image files larger than this, before reading them, as bad data (--on-error)", kNo},
    OptionFlag{"pin_memory_device", "--pin-memory-device", "N",
               "Page-lock the batch slots for this CUDA device (falls back to ordinary memory without CUDA); "
               "-1: off",
               kRun},
    OptionFlag{"log_level", "--log-level", "LEVEL", "Log level (default: $FORKFEED_LOG_LEVEL, else info)",
               kNo},
};

// The flag of one row, setting `field`; null for a type the tool has no flag for.
template <typename T>
CLI::Option* add_flag(CLI::App& app, const OptionFlag& row, T& field) {
  const std::string flag(row.flag), help(row.help);
  if constexpr (std::is_same_v<T, bool>) {
    if (row.flag.starts_with("--no-"))
      return app.add_flag_callback(
          flag, [&field] { field = false; }, help);
    return app.add_flag(flag, field, help);
  } else if constexpr (std::is_enum_v<T>) {
    // The check admits only T's names, so the callback always finds one.
    return app
        .add_option_function<std::string>(
            flag, [&field](const std::string& name) { field = parse_enum<T>(name).value_or(field); }, help)
        ->default_str(std::string(enum_name(field)))
        ->check(CLI::IsMember(enum_names<T>()));
  } else if constexpr (std::is_integral_v<T>) {
    return app.add_option(flag, field, help)->check(cli::option_integer(row.field, field));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return app.add_option(flag, field, help);
  } else {
    return nullptr;
  }
}

const OptionFlag* row_of(std::string_view field) {
  for (const OptionFlag& row : kOptionFlags) {
    if (row.field == field) return &row;
  }
  return nullptr;
}

}  // namespace

std::span<const OptionFlag> option_flags() { return kOptionFlags; }

void add_option_flags(CLI::App& app, LoaderOptions& o) {
  for (const OptionFlag& row : kOptionFlags) {
    CLI::Option* added = nullptr;
    for_each_option(o, [&](std::string_view name, auto& field, OptionScope) {
      if (name == row.field) added = add_flag(app, row, field);
    });
    // A row naming no option, or one of a type without a flag, is this table's mistake.
    if (added == nullptr)
      throw CLI::BadNameString("no LoaderOptions field '" + std::string(row.field) +
                               "' that a flag can set, for " + std::string(row.flag));
    if (!row.value_name.empty()) added->type_name(std::string(row.value_name));
  }
}

void write_reported_options(const LoaderOptions& o, Reported line, nlohmann::json& j) {
  for_each_option(o, [&](std::string_view name, const auto& field, OptionScope) {
    const OptionFlag* row = row_of(name);
    if (row == nullptr || row->reported == kNo || (line == kRunAndProbe && row->reported != kRunAndProbe))
      return;
    if constexpr (std::is_enum_v<std::remove_cvref_t<decltype(field)>>) {
      j[std::string(name)] = std::string(enum_name(field));
    } else {
      j[std::string(name)] = field;
    }
  });
}

}  // namespace forkfeed::bench
