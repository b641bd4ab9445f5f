// Splitting a transform text into its image fields' pipelines (plan/field_transforms.h).
#include "plan/field_transforms.h"

#include <algorithm>

#include "base/printable.h"

namespace forkfeed {
namespace {

std::string_view trim_field_text(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::string listed(std::span<const std::string> names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Result<std::vector<std::string>> pipelines_by_field(std::string_view transform,
                                                    std::span<const std::string> image_fields) {
  std::vector<std::string> pipelines(image_fields.size());
  if (transform.find(':') == std::string_view::npos && transform.find(';') == std::string_view::npos) {
    std::fill(pipelines.begin(), pipelines.end(), std::string(trim_field_text(transform)));
    return pipelines;
  }
  std::vector<bool> named(image_fields.size(), false);
  while (!transform.empty()) {
    const std::size_t end = std::min(transform.find(';'), transform.size());
    const std::string_view section = trim_field_text(transform.substr(0, end));
    transform.remove_prefix(std::min(end + 1, transform.size()));
    if (section.empty()) continue;
    const std::size_t colon = section.find(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument(
          "transform section \"" + printable(section) +
          "\" names no field: write \"FIELD: PIPELINE\", sections separated by ';'");
    }
    const std::string_view field = trim_field_text(section.substr(0, colon));
    const auto it = std::find(image_fields.begin(), image_fields.end(), field);
    if (it == image_fields.end()) {
      return Status::InvalidArgument(
          "transform names field '" + printable(field) +
          "', which is no image field of the schema (its image fields: " + listed(image_fields) + ")");
    }
    const auto f = static_cast<std::size_t>(it - image_fields.begin());
    if (named[f]) return Status::InvalidArgument("transform names field '" + *it + "' twice");
    named[f] = true;
    pipelines[f] = std::string(trim_field_text(section.substr(colon + 1)));
  }
  for (std::size_t f = 0; f < image_fields.size(); ++f) {
    if (!named[f]) {
      return Status::InvalidArgument("transform gives image field '" + image_fields[f] +
                                     "' no pipeline: name each image field (\"" + image_fields[f] +
                                     ": eval; ...\"), or give one pipeline for all");
    }
  }
  return pipelines;
}

}  // namespace forkfeed
