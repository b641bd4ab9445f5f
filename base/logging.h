// The loader's logger ("forkfeed"), created once per process; workers make their own.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string>

#include "forkfeed/status.h"

namespace forkfeed {

// Sets the level of loader_logger(): from `level` if set, else $FORKFEED_LOG_LEVEL, else info.
// An unknown level name is an error the caller reports.
std::shared_ptr<spdlog::logger> loader_logger();
Status set_log_level(const std::string& level);

}  // namespace forkfeed
