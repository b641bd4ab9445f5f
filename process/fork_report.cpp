// ForkReport: which hazards a snapshot of the process holds, and how to say so to a
// user: each hazard with its consequence, then the remedies that apply.
#include <string>
#include <vector>

#include "forkfeed/fork_safety.h"

namespace forkfeed {
namespace {

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

// What shows RDMA is in use: the device files, and the explicit mark.
std::string rdma_evidence(const ForkReport& r) {
  std::vector<std::string> parts = r.rdma_devices_open;
  if (r.rdma_marked) parts.emplace_back("forkfeed::rdma::mark_initialized() was called");
  return join(parts, ", ");
}

std::string devices(const std::vector<int>& ordinals) {
  std::vector<std::string> parts;
  for (int d : ordinals) parts.push_back(std::to_string(d));
  return (ordinals.size() == 1 ? "device " : "devices ") + join(parts, ", ");
}

std::string fork_support(const ForkReport& r) {
  switch (r.rdma_fork_mode) {
    case RdmaForkMode::kUnneeded:
      return "RDMA fork support unneeded (the kernel copies pinned pages on fork)";
    case RdmaForkMode::kEnabled: return "RDMA fork support enabled";
    case RdmaForkMode::kDisabled: break;
  }
  if (r.rdma_fork_env) {
    return "RDMA fork support enabled (RDMAV_FORK_SAFE or IBV_FORK_SAFE is set: libibverbs turns it on "
           "when it initialises)";
  }
  return "RDMA fork support disabled";
}

}  // namespace

std::string_view to_string(RdmaForkMode mode) {
  switch (mode) {
    case RdmaForkMode::kDisabled: return "disabled";
    case RdmaForkMode::kEnabled: return "enabled";
    case RdmaForkMode::kUnneeded: return "unneeded";
  }
  return "unknown";
}

bool ForkReport::rdma_in_use() const { return !rdma_devices_open.empty() || rdma_marked; }

RdmaForkMode ForkReport::effective_rdma_fork_mode() const {
  if (rdma_fork_mode == RdmaForkMode::kDisabled && rdma_fork_env) return RdmaForkMode::kEnabled;
  return rdma_fork_mode;
}

std::vector<ForkHazard> ForkReport::hazards() const {
  std::vector<ForkHazard> out;
  if (rdma_in_use()) {
    switch (effective_rdma_fork_mode()) {
      case RdmaForkMode::kDisabled: out.push_back(ForkHazard::kRdmaWithoutForkSupport); break;
      case RdmaForkMode::kEnabled: out.push_back(ForkHazard::kRdmaForkSupport); break;
      case RdmaForkMode::kUnneeded: break;
    }
  }
  if (ucx_loaded) out.push_back(ForkHazard::kUcx);
  if (!cuda_active_devices.empty()) out.push_back(ForkHazard::kCudaContext);
  if (threads > 1) out.push_back(ForkHazard::kThreads);
  return out;
}

std::string ForkReport::summary() const {
  std::vector<std::string> parts;
  for (ForkHazard h : hazards()) {
    switch (h) {
      case ForkHazard::kRdmaWithoutForkSupport:
        parts.push_back("RDMA in use without fork support (" + rdma_evidence(*this) + ")");
        break;
      case ForkHazard::kRdmaForkSupport:
        parts.push_back("RDMA in use with fork support (" + rdma_evidence(*this) + ")");
        break;
      case ForkHazard::kUcx: parts.push_back("UCX loaded (libucp)"); break;
      case ForkHazard::kCudaContext:
        parts.push_back("CUDA context active on " + devices(cuda_active_devices));
        break;
      case ForkHazard::kThreads: parts.push_back(std::to_string(threads) + " threads"); break;
    }
  }
  return parts.empty() ? "no fork hazard" : join(parts, "; ");
}

std::string ForkReport::describe() const {
  const std::vector<ForkHazard> found = hazards();
  std::string out;
  if (found.empty()) {
    out = "Fork safety: no hazard; forking workers is safe.\n";
  } else {
    out = "Fork safety: " + std::to_string(found.size()) + (found.size() == 1 ? " hazard" : " hazards") +
          " for forking workers.\n";
  }
  bool rdma_unprotected = false;
  for (ForkHazard h : found) {
    switch (h) {
      case ForkHazard::kRdmaWithoutForkSupport:
        rdma_unprotected = true;
        out += "- RDMA is in use (" + rdma_evidence(*this) +
               ") and libibverbs fork support is disabled: after fork, copy-on-write moves the parent's "
               "registered pages, so the NIC keeps reading and writing memory the parent no longer uses "
               "(silent data corruption), or a process crashes. This is the worst case.\n";
        break;
      case ForkHazard::kRdmaForkSupport:
        out += "- RDMA is in use (" + rdma_evidence(*this) +
               ") with libibverbs fork support enabled: registered pages are left out of forked children "
               "(MADV_DONTFORK), so a child that touches one dies with SIGSEGV.\n";
        break;
      case ForkHazard::kUcx:
        out +=
            "- UCX is loaded (libucp; a remote forkfeed Client, MPI or UCC uses it): it calls "
            "ibv_fork_init() "
            "when it opens an RDMA device, so what it registers is left out of forked children, and its "
            "maintainers forbid a forked child to touch UCX (openucx/ucx#4325).\n";
        break;
      case ForkHazard::kCudaContext:
        out += "- A CUDA context is active on " + devices(cuda_active_devices) +
               ": a forked child cannot use CUDA, and libraries that hold the context may misbehave in it.\n";
        break;
      case ForkHazard::kThreads:
        out += "- " + std::to_string(threads) +
               " threads are running: a lock another thread holds at the moment of fork (in malloc, a "
               "logger, Python's GIL) stays locked forever in the child, which can deadlock.\n";
        break;
    }
  }
  if (!found.empty()) {
    out +=
        "Remedies:\n"
        "- create the loader before RDMA or CUDA initialise and before other threads start (before "
        "init_process_group, NCCL, UCX, MPI or torch.cuda);\n";
    if (rdma_unprotected) {
      out +=
          "- set RDMAV_FORK_SAFE=1 in the environment before the process starts: the RDMA hazard becomes "
          "the milder one (registered memory stays with the parent; a child dies only if it touches it);\n";
    }
    out +=
        "- use start_method=spawn: workers start as fresh forkfeed-worker processes;\n"
        "- run forkfeedd and attach to it: its workers fork from a clean process.\n";
  }
  out += "Checked: " + fork_support(*this) + "; ";
  out += rdma_devices_open.empty() ? "no RDMA device open" : "RDMA devices: " + join(rdma_devices_open, ", ");
  if (rdma_marked) out += "; marked by forkfeed::rdma::mark_initialized()";
  out += ucx_loaded ? "; UCX loaded; " : "; UCX not loaded; ";
  if (!cuda_loaded) {
    out += "CUDA driver not loaded";
  } else if (cuda_active_devices.empty()) {
    out += "CUDA driver loaded, no active context";
  } else {
    out += "CUDA context active on " + devices(cuda_active_devices);
  }
  if (threads <= 0) {
    out += "; thread count unknown.\n";
  } else {
    out += "; " + std::to_string(threads) + (threads == 1 ? " thread.\n" : " threads.\n");
  }
  for (const std::string& what : unchecked) out += "Not checked: " + what + "\n";
  return out;
}

}  // namespace forkfeed
