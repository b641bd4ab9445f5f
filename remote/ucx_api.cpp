// UcxApi: dlopen of libucp, once per process.
#include "remote/ucx_api.h"

#include <dlfcn.h>

#include "base/owner_process.h"

namespace forkfeed {
namespace {

struct Loaded {
  UcxApi api;
  std::string why_not;  // empty: api is complete
  OwnerProcess owner;   // the process that loaded it
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
#define FORKFEED_UCX_LOAD(name)                                                                  \
  loaded.api.name = reinterpret_cast<decltype(loaded.api.name)>(::dlsym(handle, #name));         \
  if (loaded.api.name == nullptr && loaded.why_not.empty()) {                                    \
    loaded.why_not = "the UCX in libucp.so.0 lacks " #name "; forkfeed needs UCX 1.13 or later"; \
  }
  FORKFEED_UCX_FUNCTIONS(FORKFEED_UCX_LOAD)
#undef FORKFEED_UCX_LOAD
  return loaded;
}

}  // namespace

Result<const UcxApi*> UcxApi::get() {
  static const Loaded loaded = load();
  // A child of fork() has the parent's copy of UCX: its progress thread did not come
  // along, its connections and registrations are the parent's, and its atfork handlers
  // leave it unusable. Anything tried with it waits for what never comes (a connect gave
  // up after connect_timeout, blaming the transports), so it is refused at once.
  if (!loaded.owner.here()) {
    return Status::FailedPrecondition(
        "UCX was loaded by process " + std::to_string(loaded.owner.pid()) +
        " (for a remote Client), and this is "
        "process " +
        std::to_string(::getpid()) +
        ", a child it forked: a forked child cannot use UCX. Open remote "
        "Clients in a process that did not inherit UCX through fork(): the parent, or a child started by "
        "spawn "
        "(exec; Python's multiprocessing start method 'spawn' or 'forkserver')");
  }
  if (!loaded.why_not.empty()) return Status::Unavailable(loaded.why_not);
  return &loaded.api;
}

std::string UcxApi::error(ucs_status_t status) const {
  return std::string(ucs_status_string(status)) + " (UCX status " + std::to_string(static_cast<int>(status)) +
         ")";
}

}  // namespace forkfeed
