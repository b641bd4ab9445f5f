// UcxApi: the UCX entry points forkfeed uses, loaded at run time with dlopen. libforkfeed
// does not link UCX, so that a process loads it only when it serves or reads batches over
// the network (forkfeed-gateway, a remote Client): UCX loaded in a process is a fork
// hazard (it calls ibv_fork_init and installs atfork handlers), which a trainer using
// only local Loaders must not carry. The UCX headers give the types; nothing is linked.
#pragma once

#include <ucp/api/ucp.h>
#include <ucs/config/parser.h>

#include <string>

#include "forkfeed/status.h"

namespace forkfeed {

// The entry points (and one variable: the list of UCX's configuration tables), a group to
// a line (clang-format would lay the list out one per line).
// clang-format off
#define FORKFEED_UCX_FUNCTIONS(X)                                                                            \
  X(ucp_config_read) X(ucp_config_release) X(ucp_config_modify) X(ucp_init_version) X(ucp_cleanup)           \
  X(ucp_worker_create) X(ucp_worker_destroy) X(ucp_worker_get_efd) X(ucp_worker_arm)                         \
  X(ucp_worker_progress) X(ucp_worker_set_am_recv_handler) X(ucp_worker_get_address)                         \
  X(ucp_worker_release_address) X(ucp_ep_create) X(ucp_ep_close_nbx) X(ucp_am_send_nbx)                      \
  X(ucp_am_recv_data_nbx) X(ucp_am_data_release) X(ucp_request_check_status) X(ucp_request_free)             \
  X(ucp_mem_map) X(ucp_mem_unmap) X(ucs_status_string) X(ucs_config_parser_print_all_opts)                   \
  X(ucs_config_global_list)
// clang-format on

struct UcxApi {
#define FORKFEED_UCX_POINTER(name) decltype(&::name) name = nullptr;
  FORKFEED_UCX_FUNCTIONS(FORKFEED_UCX_POINTER)
#undef FORKFEED_UCX_POINTER

  // libucp.so.0 with every entry point, loaded on first use and never unloaded; or why
  // not: UCX not installed (apt-get install libucx0), or loaded by the parent of this
  // process before it forked (UCX belongs to the process that loaded it: a forked child
  // must never call it).
  static Result<const UcxApi*> get();
  // "<ucs_status_string> (UCX status <n>)".
  std::string error(ucs_status_t status) const;
};

}  // namespace forkfeed
