// OpenCV's log level, following ours.
#include "workers/opencv_logging.h"

#include <spdlog/common.h>

#include <opencv2/core/utils/logger.hpp>

namespace forkfeed {

void follow_log_level_in_opencv(int spdlog_level) {
  using cv::utils::logging::LogLevel;
  // libtiff's warnings, too, pass through OpenCV's logger (at its debug level).
  LogLevel level = LogLevel::LOG_LEVEL_SILENT;
  if (spdlog_level <= spdlog::level::trace) {
    level = LogLevel::LOG_LEVEL_VERBOSE;
  } else if (spdlog_level == spdlog::level::debug) {
    level = LogLevel::LOG_LEVEL_DEBUG;
  }
  cv::utils::logging::setLogLevel(level);
}

}  // namespace forkfeed
