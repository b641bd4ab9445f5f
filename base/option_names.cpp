// parse_* and to_string of LoaderOptions' enums (forkfeed/options.h), and the layout
// that kAuto means: all read base/option_names.h's tables.
#include "base/option_names.h"

namespace forkfeed {

std::optional<DType> parse_dtype(std::string_view name) { return parse_enum<DType>(name); }
std::optional<OnError> parse_on_error(std::string_view name) { return parse_enum<OnError>(name); }
std::optional<StartMethod> parse_start_method(std::string_view name) { return parse_enum<StartMethod>(name); }
std::optional<ForkHazardPolicy> parse_fork_hazard(std::string_view name) {
  return parse_enum<ForkHazardPolicy>(name);
}

std::string_view to_string(DType dtype) { return enum_name(dtype); }
std::string_view to_string(OnError on_error) { return enum_name(on_error); }
std::string_view to_string(StartMethod method) { return enum_name(method); }
std::string_view to_string(ForkHazardPolicy policy) { return enum_name(policy); }
std::string_view to_string(ShardLabel label) { return enum_name(label); }
std::optional<ShardLabel> parse_shard_label(std::string_view name) { return parse_enum<ShardLabel>(name); }
std::string_view to_string(Layout layout) { return enum_name(layout); }
std::optional<Layout> parse_layout(std::string_view name) { return parse_enum<Layout>(name); }
std::string_view to_string(ContentCheck check) { return enum_name(check); }
std::optional<ContentCheck> parse_content_check(std::string_view name) {
  return parse_enum<ContentCheck>(name);
}

Layout resolve(Layout layout, DType dtype) {
  if (layout != Layout::kAuto) return layout;
  return dtype == DType::kUint8 ? Layout::kNhwc : Layout::kNchw;
}

}  // namespace forkfeed
