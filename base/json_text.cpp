// parse_json_text(): nlohmann's parser, its errors said as a user can act on them.
#include "base/json_text.h"

#include "base/printable.h"

namespace forkfeed {
namespace {

// What to add to nlohmann's words: the rule a file broke where it is one JSON often breaks
// (Python's json.dump writes NaN and Infinity; a float64 past 1.8e308 overflows).
std::string_view hint(const nlohmann::json::exception& e, std::string_view words) {
  if (e.id == 406) return "; numbers beyond a double's range are not JSON";
  const std::size_t read = words.find("invalid literal; last read: '");
  if (read == std::string_view::npos) return "";
  const std::size_t end = words.find('\'', read + 29);
  const std::string_view last =
      words.substr(read + 29, end == std::string_view::npos ? end : end - read - 29);
  if (last.ends_with('N') || last.ends_with('I')) return "; NaN and Infinity are not JSON";
  return "";
}

}  // namespace

std::string without_exception_id(const char* what) {
  std::string text = what;
  if (text.starts_with('[')) {
    const std::size_t end = text.find("] ");
    if (end != std::string::npos) text.erase(0, end + 2);
  }
  return text;
}

Result<nlohmann::json> parse_json_text(std::string_view text) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    const std::string words = without_exception_id(e.what());
    return Status::BadData("not valid JSON (" + printable_cut(words) + std::string(hint(e, words)) + ")");
  }
}

}  // namespace forkfeed
