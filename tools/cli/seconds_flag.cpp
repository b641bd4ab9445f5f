// add_seconds_flag(): a finite, bounded number of seconds, converted to milliseconds once.
#include "tools/cli/seconds_flag.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "base/printable.h"

namespace forkfeed::cli {
namespace {

constexpr double kMinSeconds = 0.001;
constexpr double kMaxSeconds = 86400.0;  // a day

std::string check_seconds(const std::string& text) {
  const std::string range = "a number of seconds from 0.001 to 86400";
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(seconds)) {
    return "must be " + range + ", got '" + printable(text) + "'";
  }
  if (seconds < kMinSeconds || seconds > kMaxSeconds) return "must be " + range + ", got " + text;
  return std::string();
}

}  // namespace

CLI::Option* add_seconds_flag(CLI::App& app, const std::string& name, std::chrono::milliseconds& out,
                              const std::string& description) {
  std::ostringstream shown;
  shown << std::chrono::duration<double>(out).count();
  return app
      .add_option_function<double>(
          name,
          [&out](const double& seconds) {
            out = std::chrono::ceil<std::chrono::milliseconds>(std::chrono::duration<double>(seconds));
          },
          description)
      ->check(CLI::Validator(check_seconds, "", "seconds"))
      ->default_str(shown.str())
      ->type_name("SECONDS");
}

}  // namespace forkfeed::cli
