// UcxApi: dlopen of libucp, once per process.
#include "remote/ucx_api.h"

#include <dlfcn.h>

#include <mutex>

namespace forkfeed {
namespace {

struct Loaded {
  UcxApi api;
  std::string why_not;  // empty: api is complete
};

Loaded load() {
  Loaded loaded;
  // RTLD_LOCAL: UCX's symbols stay out of the global namespace; dlsym through the handle
  // also finds libucs's (ucs_status_string), a dependency of libucp.
  void* handle = ::dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    loaded.why_not = std::string("cannot load UCX (libucp.so.0: ") + (err != nullptr ? err : "?") +
                     "); install it (Debian: apt-get install libucx0)";
    return loaded;
  }
#define FORKFEED_UCX_LOAD(name)                                                                \
  loaded.api.name = reinterpret_cast<decltype(loaded.api.name)>(::dlsym(handle, #name));      \
  if (loaded.api.name == nullptr && loaded.why_not.empty()) {                                  \
    loaded.why_not = "the UCX in libucp.so.0 lacks " #name "; forkfeed needs UCX 1.13 or later"; \
  }
  FORKFEED_UCX_FUNCTIONS(FORKFEED_UCX_LOAD)
#undef FORKFEED_UCX_LOAD
  return loaded;
}

}  // namespace

const UcxApi* UcxApi::get(std::string& why_not) {
  static const Loaded loaded = load();
  if (!loaded.why_not.empty()) {
    why_not = loaded.why_not;
    return nullptr;
  }
  return &loaded.api;
}

std::string UcxApi::error(ucs_status_t status) const {
  return std::string(ucs_status_string(status)) + " (UCX status " + std::to_string(static_cast<int>(status)) + ")";
}

}  // namespace forkfeed
