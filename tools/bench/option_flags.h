// forkfeed-bench's face of LoaderOptions, one table: for each option the tool sets, its
// flag, the value's name and help line in --help, and whether the --json line reports it.
// The flags' types, ranges and enum names come from the options' own tables
// (plan/option_fields.h, plan/option_ranges.h, base/option_names.h).
#pragma once

#include <span>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "forkfeed/options.h"

namespace forkfeed::bench {

// Which --json lines report an option: none, a run's, or a run's and --probe's too.
enum class Reported { kNo, kRun, kRunAndProbe };

struct OptionFlag {
  std::string_view field;       // its for_each_option name
  std::string_view flag;        // "--batch"; a bool option's "--no-X" sets it false
  std::string_view value_name;  // in --help ("B"); empty: a bool flag, or an enum's names are shown
  std::string_view help;
  Reported reported;
};

// The rows, in the order --help lists them.
std::span<const OptionFlag> option_flags();

// Adds a flag per row that sets its field of `o`, checked as every face checks it; the
// defaults shown are `o`'s. `o` must outlive the parse.
void add_option_flags(CLI::App& app, LoaderOptions& o);

// Writes the options that `line` reports (kRun: a run's line; kRunAndProbe: --probe's)
// into `j`, under their field names; enums by their names.
void write_reported_options(const LoaderOptions& o, Reported line, nlohmann::json& j);

}  // namespace forkfeed::bench
