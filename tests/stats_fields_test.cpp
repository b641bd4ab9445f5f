// The record tables and their faces: every LoaderStats field (loader/stats_fields.h), each
// with a distinct value, reaches forkfeedd's stats reply and back, a fan-in Client's merge
// by its rule and forkfeed-bench's --json line; every RemoteDaemonStats field reaches the
// bench's JSON; every option the bench reports or sets is a LoaderOptions field. A new
// field in a table is checked here with no edit. (The faces on live streams, a fan-in
// Client's included: fan_in_test's EveryStatReachesEachFaceByItsRule.)
#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/option_names.h"
#include "client/remote/daemon_stats_fields.h"
#include "loader/stats_fields.h"
#include "plan/option_fields.h"
#include "protocol/stream_request.h"
#include "tools/bench/option_flags.h"
#include "tools/bench/report.h"

namespace forkfeed {
namespace {

using nlohmann::json;

// A value of field type T that is not the default and differs with `k`.
template <typename T>
T distinct(std::uint64_t k) {
  if constexpr (std::is_same_v<T, bool>) {
    return true;
  } else if constexpr (std::is_same_v<T, StartMethod>) {
    return k % 2 ? StartMethod::kSpawn : StartMethod::kAuto;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "value " + std::to_string(k);
  } else {
    return static_cast<T>(k);
  }
}

// Stats whose every field has a value of its own, from `base` on.
LoaderStats distinct_stats(std::uint64_t base) {
  LoaderStats s;
  std::uint64_t k = base;
  for_each_stat(
      s, [&](const char*, auto& field) { field = distinct<std::remove_cvref_t<decltype(field)>>(k++); });
  return s;
}

// The JSON face of one stat, as forkfeedd, Python and the bench write it.
json json_of(const LoaderStats& s, const char* name) {
  json body = json::object();
  write_loader_stats(s, body);
  return body.value(name, json());
}

TEST(StatsFieldsTest, EveryStatTravelsInTheStatsReplyAndBack) {
  const LoaderStats sent = distinct_stats(7);
  json body = json::object();
  write_loader_stats(sent, body);
  auto back = parse_loader_stats(body);
  ASSERT_TRUE(back.ok()) << back.status().message();
  std::size_t fields = 0;
  for_each_stat(sent, [&](const char* name, const auto&) {
    ++fields;
    EXPECT_TRUE(body.contains(name)) << name;
    EXPECT_EQ(json_of(*back, name), json_of(sent, name)) << name;
  });
  EXPECT_EQ(body.size(), fields) << body.dump();
}

TEST(StatsFieldsTest, AFanInMergesEveryStatByItsRule) {
  const std::vector<LoaderStats> daemons = {distinct_stats(100), distinct_stats(1001), distinct_stats(20000)};
  const LoaderStats merged = merge_stats(daemons);
  const LoaderStats none;
  for_each_stat_member([&](const char* name, auto member, StatMerge merge) {
    using T = std::remove_cvref_t<decltype(none.*member)>;
    switch (merge) {
      case StatMerge::kSum:
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          EXPECT_EQ(merged.*member, daemons[0].*member + daemons[1].*member + daemons[2].*member) << name;
        } else {
          ADD_FAILURE() << name << " is summed but is no integer";
        }
        break;
      case StatMerge::kFirst: EXPECT_EQ(merged.*member, daemons[0].*member) << name; break;
      case StatMerge::kClient:  // the Client fills it with its own
        EXPECT_EQ(merged.*member, none.*member) << name;
        break;
    }
  });
  EXPECT_EQ(json_of(merge_stats({}), "slots"), json_of(none, "slots"));
}

TEST(StatsFieldsTest, TheBenchJsonCarriesEveryStatAndEveryDaemonStat) {
  bench::RunReport report;
  report.stats = distinct_stats(3);
  RemoteDaemonStats daemon;
  std::uint64_t k = 50;
  for_each_daemon_stat(daemon,
                       [&](const char*, auto& f) { f = distinct<std::remove_cvref_t<decltype(f)>>(k++); });
  report.daemons = {daemon};
  const json j = json::parse(bench::json_line(report));
  for_each_stat(report.stats, [&](const char* name, const auto&) {
    EXPECT_EQ(j.value(name, json()), json_of(report.stats, name)) << name;
  });
  ASSERT_TRUE(j.contains("daemons") && j["daemons"].size() == 1u) << j.dump();
  for_each_daemon_stat(daemon, [&](const char* name, const auto& value) {
    EXPECT_EQ(j["daemons"][0].value(name, json()), json(value)) << name;
  });
}

TEST(StatsFieldsTest, EveryBenchOptionRowIsAnOptionWithAFlagAndTheJsonReportsItsRows) {
  LoaderOptions o;
  o.workers = 3;
  o.seed = 77;
  o.on_error = OnError::kSkip;
  CLI::App app;
  ASSERT_NO_THROW(bench::add_option_flags(app, o));
  bench::RunReport run;
  run.options = o;
  const json j = json::parse(bench::json_line(run));
  for (const bench::OptionFlag& row : bench::option_flags()) {
    EXPECT_NE(app.get_option_no_throw(std::string(row.flag)), nullptr) << row.flag;
    bool found = false;
    for_each_option(o, [&](std::string_view name, const auto& value, OptionScope) {
      if (name != row.field) return;
      found = true;
      const std::string key(name);
      if (row.reported == bench::Reported::kNo) return;  // (start_method is a stat's name too)
      if constexpr (std::is_enum_v<std::remove_cvref_t<decltype(value)>>) {
        EXPECT_EQ(j.value(key, json()), json(std::string(enum_name(value)))) << key;
      } else {
        EXPECT_EQ(j.value(key, json()), json(value)) << key;
      }
    });
    EXPECT_TRUE(found) << row.field << " is no LoaderOptions field";
  }
}

}  // namespace
}  // namespace forkfeed
