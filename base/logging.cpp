// The loader's logger.
#include "base/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "forkfeed/status.h"

namespace forkfeed {

std::shared_ptr<spdlog::logger> loader_logger() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::get("forkfeed");
    if (!l) l = spdlog::stderr_color_mt("forkfeed");
    l->set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %v");
    return l;
  }();
  return logger;
}

Status set_log_level(const std::string& level) {
  std::string name = level;
  if (name.empty()) {
    const char* env = std::getenv("FORKFEED_LOG_LEVEL");
    name = env != nullptr ? env : "info";
  }
  const auto parsed = spdlog::level::from_str(name);
  // from_str answers "off" for names it does not know.
  if (parsed == spdlog::level::off && name != "off") {
    return Status::InvalidArgument("unknown log level '" + name +
                                   "'; use trace, debug, info, warn, error, critical or off");
  }
  loader_logger()->set_level(parsed);
  return Status::Ok();
}

}  // namespace forkfeed
