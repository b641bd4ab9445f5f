// DaemonConfig: everything forkfeedd is told at start, from a YAML file
// (config/forkfeedd.yaml shows every key) and from flags, which override the file.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/admission.h"
#include "dataset/dataset_source.h"
#include "forkfeed/status.h"

namespace forkfeed {

// A dataset clients may open by name: exactly one of the two.

// Connections that have not opened a stream (clients before their open_stream,
// forkfeed-ctl, sockets that never speak): at most max_pending_connections at once, apart
// from max_streams, and each closed when it has opened no stream `timeout` after accept
// (replies do not extend it; only an open_stream building its loader is left alone).
// 256: a burst of hundreds of ranks on a big node; each costs one thread while pending.
struct HandshakeLimits {
  std::uint32_t max_pending_connections = 256;
  std::chrono::milliseconds timeout{5000};
};

struct DaemonConfig {
  std::string socket_path;  // empty: default_socket_path()
  std::map<std::string, DatasetSource> datasets;
  // open_stream fields a request leaves out (transform, size, dtype, batch_size, workers,
  // prefetch, on_error ...), as in the request.
  nlohmann::json defaults = nlohmann::json::object();
  Limits limits;
  HandshakeLimits handshake;
  // Users besides the daemon's own that may connect; they may open named datasets only.
  std::vector<uid_t> allow_uids;
  std::string log_level = "info";
  // HOST:PORT addresses to serve remote clients on (forkfeed-gateway, over UCX), and the
  // file holding the token they must present: required when `listen` is not empty.
  std::vector<std::string> listen;
  std::string token_file;
};

// Reads `path` into `config`, keeping what the file does not set. Errors name the file
// and the key.
Status load_config_file(const std::string& path, DaemonConfig& config);

// "1073741824", "512M", "64GiB", "2T": bytes, with binary K/M/G/T suffixes.
Result<std::uint64_t> parse_bytes(std::string_view text);

// A --dataset flag: NAME=PATH, a folder (ImageFolder) or a file (manifest), or
// NAME=shards:SPEC (tar shards). A PATH that names tar shards (a brace pattern, a .tar
// file, a folder of .tar files without class folders) is refused, saying to write shards:.
Status add_dataset_flag(std::string_view flag, DaemonConfig& config);

// Problems that would make every stream fail: checked once at start.
Status validate(const DaemonConfig& config);

}  // namespace forkfeed
