// DaemonConfig from YAML and flags.
#include "daemon/config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <filesystem>
#include <set>

#include "base/number_text.h"
#include "base/option_names.h"
#include "base/printable.h"
#include "base/regular_file.h"
#include "daemon/limit_fields.h"
#include "protocol/stream_request.h"
#include "remote/net_address.h"
#include "remote/token.h"

namespace forkfeed {
namespace {

Status bad_key(const std::string& path, const std::string& key, const std::string& what) {
  return Status::InvalidArgument("config " + printable(path) + ": " + printable(key) + ": " + what);
}

// "'0.5x' (line 3)": a value and where it is, for a message.
std::string value_at(const YAML::Node& node) {
  return quoted_start(node.Scalar(), 40) + " (line " + std::to_string(node.Mark().line + 1) + ")";
}

// A YAML value of `defaults` as JSON, strictly: a list (mean, std) holds numbers only,
// each the whole of its text; digits alone are an integer; true/false a boolean; other
// text a string, for parse_stream_request to judge. InvalidArgument names the value and
// its line.
Result<nlohmann::json> to_json(const YAML::Node& node) {
  if (node.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& item : node) {
      const auto number = item.IsScalar() ? parse_real(item.Scalar()) : std::nullopt;
      if (!number) return Status::InvalidArgument(value_at(item) + " is not a number");
      a.push_back(*number);
    }
    return a;
  }
  if (!node.IsScalar()) return Status::InvalidArgument("must be a number, a string or a list of numbers");
  const std::string& text = node.Scalar();
  if (text == "true" || text == "false") return nlohmann::json(text == "true");
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    const auto number = parse_whole_number(text, ~std::uint64_t{0});
    if (!number) return Status::InvalidArgument(value_at(node) + " is larger than 18446744073709551615");
    return nlohmann::json(*number);
  }
  return nlohmann::json(text);
}

// One of allow_uids: a user id in decimal, as id(1) prints it.
Result<uid_t> uid_of(const YAML::Node& node) {
  constexpr std::uint64_t kMostUid = 4294967294;  // (uid_t)-1 is no user
  const auto uid = node.IsScalar() ? parse_whole_number(node.Scalar(), kMostUid) : std::nullopt;
  if (!uid) {
    return Status::InvalidArgument(value_at(node) + " is not a user id (a whole number from 0 to " +
                                   std::to_string(kMostUid) + ")");
  }
  return static_cast<uid_t>(*uid);
}

}  // namespace

Result<std::uint64_t> parse_bytes(std::string_view text) {
  const auto not_bytes = [&] {
    std::string message = "'";
    message.append(text).append("' is not a byte count (e.g. 1073741824, 512M, 64G)");
    return Status::InvalidArgument(std::move(message));
  };
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 19) return not_bytes();
  std::uint64_t value = std::stoull(std::string(text.substr(0, digits)));
  std::string suffix(text.substr(digits));
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.ends_with("IB")) suffix.resize(suffix.size() - 2);
  if (suffix.ends_with("B")) suffix.resize(suffix.size() - 1);
  static const std::map<std::string, int> shifts = {{"", 0}, {"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}};
  const auto it = shifts.find(suffix);
  if (it == shifts.end() || (it->second > 0 && value > (~std::uint64_t{0} >> it->second))) return not_bytes();
  return value << it->second;
}

namespace {

// Why `path`, given without "shards:", names tar shards rather than an ImageFolder or a
// manifest, as list_shards() would take it (dataset/shards/shard_list.h); empty if it
// does not. A folder with any subfolder is an ImageFolder whatever else it holds.
std::string shards_without_prefix(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    return path.find('{') != std::string::npos ? "does not exist (its braces are a shard pattern)" : "";
  }
  if (std::filesystem::is_regular_file(status)) return path.ends_with(".tar") ? "is a tar file" : "";
  if (!std::filesystem::is_directory(status)) return "";
  bool tars = false;
  for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) return "";
    const std::string name = it->path().filename().string();
    tars = tars || (!name.starts_with('.') && name.ends_with(".tar"));
  }
  return tars ? "holds .tar files and no class folders" : "";
}

// The dataset `path` names, as --dataset NAME=PATH and a config's NAME: PATH take it: a
// folder an ImageFolder, a file a manifest, shards:SPEC tar shards. Tar shards without
// "shards:" are refused, with `as_shards`: how to write them.
Result<DatasetSource> dataset_of_path(const std::string& path, const std::string& as_shards) {
  DatasetSource source;
  if (path.starts_with("shards:")) {
    source.shards = absolute_path(path.substr(7));
    return source;
  }
  if (const std::string why = shards_without_prefix(path); !why.empty()) {
    return Status::InvalidArgument(printable(path) + " " + why + ": tar shards are NAME=shards:SPEC (" +
                                   as_shards + ")");
  }
  std::error_code ec;
  (std::filesystem::is_directory(path, ec) ? source.image_folder : source.manifest) = absolute_path(path);
  return source;
}

}  // namespace

Status add_dataset_flag(std::string_view flag, DaemonConfig& config) {
  const std::size_t eq = flag.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == flag.size()) {
    return Status::InvalidArgument("--dataset '" + printable(flag) +
                                   "': use NAME=PATH (a folder or a manifest) or NAME=shards:SPEC");
  }
  const std::string name(flag.substr(0, eq)), path(flag.substr(eq + 1));
  auto source = dataset_of_path(path, "--dataset " + printable(name) + "=shards:" + printable(path));
  if (!source.ok())
    return Status::InvalidArgument("--dataset '" + printable(flag) + "': " + source.status().message());
  config.datasets[name] = std::move(source).value();
  return Status::Ok();
}

namespace {

// Reads a config's top-level keys into a DaemonConfig, one function per section. `at_`
// follows the key being read, so that a value yaml-cpp cannot convert (it throws) is
// named in the message.
class ConfigReader {
 public:
  ConfigReader(const std::string& path, DaemonConfig& config) : path_(path), config_(config) {}

  Status read(const YAML::Node& root) {
    try {
      for (const auto& entry : root) {
        const std::string key = entry.first.as<std::string>();
        at_ = key;
        if (Status s = section(key, entry.second); !s.ok()) return s;
      }
    } catch (const YAML::Exception& e) {
      if (!at_.empty()) return bad(at_, e.what());
      return Status::InvalidArgument("config " + printable(path_) + ": " + e.what());
    }
    return Status::Ok();
  }

 private:
  Status bad(const std::string& key, const std::string& what) const { return bad_key(path_, key, what); }

  Status section(const std::string& key, const YAML::Node& value) {
    if (key == "socket") {
      config_.socket_path = value.as<std::string>();
    } else if (key == "listen") {
      if (!value.IsSequence()) return bad(key, "must be a list of HOST:PORT addresses");
      for (const auto& address : value) config_.listen.push_back(address.as<std::string>());
    } else if (key == "token_file") {
      config_.token_file = value.as<std::string>();
    } else if (key == "log_level") {
      config_.log_level = value.as<std::string>();
    } else if (key == "allow_uids") {
      return allow_uids(value);
    } else if (key == "datasets") {
      return datasets(value);
    } else if (key == "defaults") {
      return defaults(value);
    } else if (key == "limits") {
      return limits(value);
    } else {
      return bad(key, "unknown key; see config/forkfeedd.yaml for the known ones");
    }
    return Status::Ok();
  }

  Status allow_uids(const YAML::Node& value) {
    if (!value.IsSequence()) return bad("allow_uids", "must be a list of user ids");
    for (const auto& item : value) {
      auto uid = uid_of(item);
      if (!uid.ok()) return bad("allow_uids", uid.status().message());
      config_.allow_uids.push_back(*uid);
    }
    return Status::Ok();
  }

  Status datasets(const YAML::Node& value) {
    if (!value.IsMap()) return bad("datasets", "must map names to {image_folder: DIR} or {manifest: FILE}");
    for (const auto& d : value) {
      const std::string name = d.first.as<std::string>();
      at_ = "datasets." + name;
      if (Status s = dataset(name, d.second); !s.ok()) return s;
    }
    return Status::Ok();
  }

  // One dataset: NAME: PATH, as --dataset takes it, or a mapping of DatasetSource's fields.
  Status dataset(const std::string& name, const YAML::Node& value) {
    if (value.IsScalar()) {
      const std::string path = value.as<std::string>();
      if (path.empty()) return bad(at_, "needs a folder, a manifest or shards:SPEC");
      auto source = dataset_of_path(path, printable(name) + ": shards:" + printable(path));
      if (!source.ok()) return bad(at_, source.status().message());
      config_.datasets[name] = std::move(source).value();
      return Status::Ok();
    }
    DatasetSource source;
    for (const auto& f : value) {
      const std::string field = f.first.as<std::string>();
      if (field == "image_folder") {
        source.image_folder = f.second.as<std::string>();
      } else if (field == "manifest") {
        source.manifest = f.second.as<std::string>();
      } else if (field == "shards") {
        source.shards = f.second.as<std::string>();
      } else if (field == "shard_label") {
        const auto label = parse_shard_label(f.second.as<std::string>());
        if (!label) return bad("datasets." + name + "." + field, "use " + enum_names_or<ShardLabel>());
        source.shard_label = *label;
      } else if (field == "shard_label_field") {
        source.shard_label_field = f.second.as<std::string>();
      } else {
        return bad("datasets." + name + "." + field,
                   "unknown key; use image_folder, manifest or shards (with shard_label, shard_label_field)");
      }
    }
    if (Status s = source.check(); !s.ok()) return bad("datasets." + name, s.message());
    config_.datasets[name] = source;
    return Status::Ok();
  }

  Status defaults(const YAML::Node& value) {
    if (!value.IsMap()) return bad("defaults", "must be a mapping of open_stream fields");
    nlohmann::json defaults = nlohmann::json::object();
    for (const auto& d : value) {
      const std::string field = d.first.as<std::string>();
      at_ = "defaults." + field;
      auto json = to_json(d.second);
      if (!json.ok()) return bad(at_, json.status().message());
      // Each field alone first, so that a refusal names its key and line.
      if (auto parsed = parse_stream_request(nlohmann::json{{field, *json}}); !parsed.ok()) {
        const std::string line = " (line " + std::to_string(d.first.Mark().line + 1) + ")";
        return bad(at_, parsed.status().message() + line);
      }
      defaults[field] = std::move(json).value();
    }
    if (auto parsed = parse_stream_request(defaults); !parsed.ok()) {
      return bad("defaults", parsed.status().message());
    }
    config_.defaults = defaults;
    return Status::Ok();
  }

  Status limits(const YAML::Node& value) {
    if (!value.IsMap()) return bad("limits", "must be a mapping");
    for (const auto& l : value) {
      const std::string name = l.first.as<std::string>();
      at_ = "limits." + name;
      Status s = set_limit(config_, name, l.second.as<std::string>());
      if (s.code() == Status::Code::kNotFound) return bad(at_, "unknown limit; use " + limit_keys());
      // The key's line: a value left empty (null) is marked on the line after it.
      if (!s.ok()) return bad(at_, s.message() + " (line " + std::to_string(l.first.Mark().line + 1) + ")");
    }
    return Status::Ok();
  }

  const std::string& path_;
  DaemonConfig& config_;
  std::string at_;
};

}  // namespace

Status load_config_file(const std::string& path, DaemonConfig& config) {
  // Read here, not by YAML::LoadFile: a directory made it throw what it does not catch,
  // and a FIFO blocked it.
  constexpr SizeLimit kConfigLimit{1 << 20, "the limit of", "a forkfeedd config is a few KiB"};
  Result<std::string> text = read_regular_file(path, "config file", kConfigLimit);
  if (!text.ok()) return text.status();
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("config " + printable(path) + " is not valid YAML: " + e.what());
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) {
    return Status::InvalidArgument("config " + printable(path) + ": the top level must be a mapping");
  }
  return ConfigReader(path, config).read(root);
}

Status validate(const DaemonConfig& config) {
  if (config.limits.max_streams == 0) return Status::InvalidArgument("max_streams must be at least 1");
  if (config.handshake.max_pending_connections == 0) {
    return Status::InvalidArgument("max_pending_connections must be at least 1, or no client could connect");
  }
  if (config.handshake.timeout.count() <= 0) {
    return Status::InvalidArgument("handshake_timeout_ms must be at least 1");
  }
  if (!config.token_file.empty() && config.listen.empty()) {
    return Status::InvalidArgument(
        "token_file is set but listen is not: give --listen HOST:PORT to serve remote "
        "clients, or drop the token file");
  }
  if (!config.listen.empty()) {
    if (config.token_file.empty()) {
      return Status::InvalidArgument(
          "--listen needs --token-file FILE: remote clients must present the token in it (make one with: "
          "head -c 32 "
          "/dev/urandom | base64 > FILE; chmod 600 FILE)");
    }
    if (auto token = read_token_file(config.token_file, "--token-file"); !token.ok()) return token.status();
    for (const std::string& address : config.listen) {
      if (auto parsed = parse_net_address(address, "--listen"); !parsed.ok()) return parsed.status();
    }
    if (config.datasets.empty()) {
      return Status::InvalidArgument(
          "--listen serves remote clients only named datasets, and none is named: add "
          "--dataset NAME=PATH");
    }
  }
  for (const auto& [name, source] : config.datasets) {
    const std::string& p = source.path();
    std::error_code ec;
    if (source.shards.empty() && !std::filesystem::exists(p, ec)) {
      return Status::NotFound("dataset '" + printable(name) + "': " + printable(p) + " does not exist");
    }
  }
  return Status::Ok();
}

}  // namespace forkfeed
