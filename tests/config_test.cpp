// DaemonConfig: a YAML file sets what it names and keeps the rest; every bad entry is
// refused with the file and the key in the message; byte counts, --dataset flags and
// the start-up checks.
#include "daemon/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "testing/temp_dataset.h"

namespace forkfeed {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  // Writes `yaml` to a file in the temp dir and returns its path.
  std::string file(const std::string& yaml, const std::string& name = "forkfeedd.yaml") {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << yaml;
    return path;
  }
  // Loads `yaml` into a fresh config; the status.
  Status load(const std::string& yaml) {
    config_ = DaemonConfig{};
    return load_config_file(file(yaml), config_);
  }
  // Expects `yaml` refused, naming the file and `key`, and saying `what`.
  void expect_refused(const std::string& yaml, const std::string& key, const std::string& what) {
    const Status s = load(yaml);
    ASSERT_FALSE(s.ok()) << "accepted:\n" << yaml;
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.message();
    EXPECT_NE(s.message().find(dir_.path() + "/forkfeedd.yaml"), std::string::npos)
        << "the file is not named: " << s.message();
    EXPECT_NE(s.message().find(key), std::string::npos)
        << "the key " << key << " is not named: " << s.message();
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  }

  testing::TempDir dir_;
  DaemonConfig config_;
};

TEST_F(ConfigTest, AValidFileSetsEveryKey) {
  std::filesystem::create_directories(dir_.path() + "/train");
  const Status s = load(
      "socket: /run/ff.sock\n"
      "log_level: warn\n"
      "allow_uids: [1001, 1002]\n"
      "datasets:\n"
      "  train: {image_folder: /data/train}\n"
      "  val: {manifest: /data/val.tsv}\n"
      "  local: " +
      dir_.path() +
      "/train\n"
      "defaults:\n"
      "  transform: eval\n"
      "  size: 96\n"
      "  batch_size: 32\n"
      "  shuffle: false\n"
      "  mean: [0.5, 0.5, 0.5]\n"
      "limits:\n"
      "  max_streams: 5\n"
      "  max_workers: 12\n"
      "  max_stream_workers: 3\n"
      "  max_arena_bytes: 2G\n"
      "  max_stream_arena_bytes: 512MiB\n"
      "  max_pending_connections: 9\n"
      "  handshake_timeout_ms: 1500\n");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(config_.socket_path, "/run/ff.sock");
  EXPECT_EQ(config_.log_level, "warn");
  EXPECT_EQ(config_.allow_uids, (std::vector<uid_t>{1001, 1002}));
  ASSERT_EQ(config_.datasets.size(), 3u);
  EXPECT_EQ(config_.datasets["train"].image_folder, "/data/train");
  EXPECT_EQ(config_.datasets["train"].manifest, "");
  EXPECT_EQ(config_.datasets["val"].manifest, "/data/val.tsv");
  EXPECT_EQ(config_.datasets["local"].image_folder, dir_.path() + "/train") << "a folder is an ImageFolder";
  EXPECT_EQ(config_.defaults["transform"], "eval");
  EXPECT_EQ(config_.defaults["size"], 96);
  EXPECT_EQ(config_.defaults["batch_size"], 32);
  EXPECT_EQ(config_.defaults["shuffle"], false);
  EXPECT_EQ(config_.defaults["mean"], nlohmann::json::array({0.5, 0.5, 0.5}));
  EXPECT_EQ(config_.limits.max_streams, 5u);
  EXPECT_EQ(config_.limits.max_workers, 12u);
  EXPECT_EQ(config_.limits.max_stream_workers, 3u);
  EXPECT_EQ(config_.limits.max_arena_bytes, 2ull << 30);
  EXPECT_EQ(config_.limits.max_stream_arena_bytes, 512ull << 20);
  EXPECT_EQ(config_.handshake.max_pending_connections, 9u);
  EXPECT_EQ(config_.handshake.timeout, std::chrono::milliseconds(1500));
}

TEST_F(ConfigTest, WhatTheFileDoesNotSetKeepsItsValue) {
  config_.log_level = "debug";  // as a flag read earlier might have set it
  config_.limits.max_workers = 7;
  ASSERT_TRUE(load_config_file(file("limits:\n  max_streams: 3\n"), config_).ok());
  EXPECT_EQ(config_.log_level, "debug");
  EXPECT_EQ(config_.limits.max_workers, 7u);
  EXPECT_EQ(config_.limits.max_streams, 3u);

  const DaemonConfig defaults;
  ASSERT_TRUE(load("").ok()) << "an empty file is a valid config";
  EXPECT_EQ(config_.log_level, "info");
  EXPECT_EQ(config_.limits.max_streams, defaults.limits.max_streams);
  EXPECT_EQ(config_.handshake.max_pending_connections, 256u);
  EXPECT_EQ(config_.handshake.timeout, std::chrono::milliseconds(5000));
  EXPECT_TRUE(config_.datasets.empty());
  EXPECT_TRUE(config_.defaults.empty());
  EXPECT_TRUE(validate(config_).ok());
}

TEST_F(ConfigTest, TheExampleConfigLoadsAndIsValid) {
  const Status s = load_config_file(FORKFEED_SOURCE_DIR "/config/forkfeedd.yaml", config_);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(config_.log_level, "info");
  EXPECT_EQ(config_.limits.max_streams, 64u);
  EXPECT_EQ(config_.handshake.max_pending_connections, 256u);
  EXPECT_EQ(config_.handshake.timeout, std::chrono::milliseconds(5000));
  EXPECT_TRUE(validate(config_).ok()) << validate(config_).message();
}

TEST_F(ConfigTest, UnknownKeysAreNamed) {
  expect_refused("sockte: /tmp/x\n", "sockte", "unknown key");
  expect_refused("limits:\n  max_stream: 3\n", "limits.max_stream", "unknown limit");
  expect_refused("datasets:\n  train: {image_folder: /d, labels: /l}\n", "datasets.train.labels",
                 "unknown key");
  expect_refused("defaults:\n  batchsize: 3\n", "defaults", "unknown field 'batchsize'");
}

TEST_F(ConfigTest, KeysOfTheWrongShapeAreNamed) {
  expect_refused("allow_uids: 1000\n", "allow_uids", "must be a list");
  expect_refused("datasets: [a, b]\n", "datasets", "must map names");
  expect_refused("defaults: 3\n", "defaults", "must be a mapping");
  expect_refused("limits: 3\n", "limits", "must be a mapping");
  expect_refused("datasets:\n  train: {image_folder: /d, manifest: /m}\n", "datasets.train", "exactly one");
  expect_refused("datasets:\n  train: {}\n", "datasets.train", "exactly one");
  expect_refused("- a\n- b\n", "forkfeedd.yaml", "the top level must be a mapping");
}

TEST_F(ConfigTest, BadValuesAreNamed) {
  expect_refused("limits:\n  max_arena_bytes: lots\n", "limits.max_arena_bytes",
                 "'lots' is not a byte count");
  expect_refused("limits:\n  max_stream_arena_bytes: 3Q\n", "limits.max_stream_arena_bytes",
                 "not a byte count");
  expect_refused("defaults:\n  size: big\n", "defaults", "size");
}

// Found from outside: numbers were read with std::stod, which takes a prefix ("0.5x" was
// 0.5), and user ids by yaml-cpp, which reads "010" as octal (8) and "0x3e8" as hex. A
// number in the config is the whole of its text or an error naming the key, the value
// and its line.
TEST_F(ConfigTest, ANumberIsTheWholeValueOrAnError) {
  expect_refused("defaults:\n  mean: [0.5x, 0.5, 0.5]\n", "defaults.mean", "'0.5x' (line 2) is not a number");
  expect_refused("defaults:\n  std: [0.2, 0.2, '0.2 ']\n", "defaults.std", "is not a number");
  expect_refused("defaults:\n  std: [0.2, .inf, 0.2]\n", "defaults.std", "'.inf' (line 2) is not a number");
  expect_refused("defaults:\n  size: 64\n  batch_size: 12x\n", "defaults.batch_size", "line 3");
  expect_refused("defaults:\n  batch_size: 99999999999999999999\n", "defaults.batch_size",
                 "'99999999999999999999' (line 2) is larger than");
  expect_refused("allow_uids: [1000, 0x3e8]\n", "allow_uids", "'0x3e8' (line 1) is not a user id");
  expect_refused("allow_uids: [1.5]\n", "allow_uids", "'1.5' (line 1) is not a user id");
  expect_refused("allow_uids: [-1]\n", "allow_uids", "'-1' (line 1) is not a user id");
  expect_refused("allow_uids: [4294967295]\n", "allow_uids", "is not a user id");
  ASSERT_TRUE(load("allow_uids: [010, 1001]\ndefaults:\n  mean: [+0.5, -.25, 1e-1]\n").ok());
  EXPECT_EQ(config_.allow_uids, (std::vector<uid_t>{10, 1001})) << "010 is ten, not octal";
  EXPECT_EQ(config_.defaults["mean"], nlohmann::json::array({0.5, -0.25, 0.1}));
}

TEST_F(ConfigTest, ValuesOfTheWrongTypeAreNamed) {
  expect_refused("limits:\n  max_streams: many\n", "limits.max_streams", "line 2");
  expect_refused("limits:\n  handshake_timeout_ms: soon\n", "limits.handshake_timeout_ms", "line 2");
  expect_refused("allow_uids: [root]\n", "allow_uids", "line 1");
  expect_refused("socket: [a, b]\n", "socket", "line 1");
  expect_refused("datasets:\n  train: {image_folder: [a, b]}\n", "datasets.train", "line 2");
}

TEST_F(ConfigTest, FilesThatCannotBeReadAreRefusedNotThrown) {
  const Status missing = load_config_file(dir_.path() + "/none.yaml", config_);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("none.yaml"), std::string::npos) << missing.message();

  const Status directory = load_config_file(dir_.path(), config_);
  EXPECT_FALSE(directory.ok()) << "a directory was read as a config";

  const Status yaml = load("limits: {max_streams: 3\n");
  EXPECT_FALSE(yaml.ok());
  EXPECT_NE(yaml.message().find("is not valid YAML"), std::string::npos) << yaml.message();
}

// parse_bytes(text), or a test failure and 0.
std::uint64_t bytes(std::string_view text) {
  auto parsed = parse_bytes(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? *parsed : 0;
}

TEST(ParseBytes, ReadsBinarySuffixes) {
  EXPECT_EQ(bytes("1073741824"), 1073741824u);
  EXPECT_EQ(bytes("512M"), 512ull << 20);
  EXPECT_EQ(bytes("64GiB"), 64ull << 30);
  EXPECT_EQ(bytes("64gb"), 64ull << 30);
  EXPECT_EQ(bytes("2T"), 2ull << 40);
  EXPECT_EQ(bytes("3k"), 3ull << 10);
  EXPECT_EQ(bytes("0"), 0u);
}

TEST(ParseBytes, RefusesWhatIsNotAByteCount) {
  for (const char* text : {"", "M", "1.5G", "-1", "12X", "12 M", "99999999999999999999", "16777216T"}) {
    const auto bytes = parse_bytes(text);
    ASSERT_FALSE(bytes.ok()) << "'" << text << "' was read as a byte count";
    EXPECT_EQ(bytes.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(bytes.status().message().find(std::string("'") + text + "' is not a byte count"),
              std::string::npos)
        << bytes.status().message();
  }
  EXPECT_EQ(bytes("16777215T"), 16777215ull << 40) << "the largest count that fits";
}

TEST(DatasetFlag, AFolderIsAnImageFolderAndAFileAManifest) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/train");
  std::ofstream(dir.path() + "/val.tsv") << "a.jpg\t0\n";
  DaemonConfig config;
  ASSERT_TRUE(add_dataset_flag("train=" + dir.path() + "/train/", config).ok());
  ASSERT_TRUE(add_dataset_flag("val=" + dir.path() + "/./val.tsv", config).ok());
  EXPECT_EQ(config.datasets["train"].image_folder, dir.path() + "/train");
  EXPECT_TRUE(config.datasets["train"].manifest.empty());
  EXPECT_EQ(config.datasets["val"].manifest, dir.path() + "/val.tsv");
  EXPECT_TRUE(config.datasets["val"].image_folder.empty());
  for (const char* bad : {"train", "=/data", "train="}) {
    const Status s = add_dataset_flag(bad, config);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("NAME=PATH"), std::string::npos) << s.message();
  }
}

// Found from outside: a brace pattern given as --dataset NAME=SPEC was taken for a
// manifest, "…/s-{000..004}.tar does not exist"; a tar file and a folder of tars were
// taken for a manifest and an ImageFolder. Each is refused, saying how shards are given.
TEST(DatasetFlag, TarShardsWithoutShardsAreToldToSayShards) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/tars");
  std::filesystem::create_directories(dir.path() + "/classes/cat");
  for (const char* tar : {"/tars/s-000.tar", "/tars/s-001.tar", "/classes/stray.tar"}) {
    std::ofstream(dir.path() + tar) << "";
  }
  const std::string pattern = dir.path() + "/s-{000..004}.tar";
  for (const std::string& path : {pattern, dir.path() + "/tars/s-000.tar", dir.path() + "/tars"}) {
    DaemonConfig config;
    const Status s = add_dataset_flag("train=" + path, config);
    ASSERT_FALSE(s.ok()) << path << " was taken for " << config.datasets["train"].describe();
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.message();
    EXPECT_NE(s.message().find("tar shards are NAME=shards:SPEC"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("--dataset train=shards:" + path), std::string::npos) << s.message();

    const std::string yaml = dir.path() + "/forkfeedd.yaml";
    std::ofstream(yaml) << "datasets:\n  train: '" << path << "'\n";
    const Status from_file = load_config_file(yaml, config);
    ASSERT_FALSE(from_file.ok()) << path;
    EXPECT_NE(from_file.message().find(yaml), std::string::npos) << from_file.message();
    EXPECT_NE(from_file.message().find("datasets.train"), std::string::npos) << from_file.message();
    EXPECT_NE(from_file.message().find("train: shards:" + path), std::string::npos) << from_file.message();
  }
  DaemonConfig config;
  EXPECT_NE(add_dataset_flag("train=" + pattern, config).message().find("does not exist"), std::string::npos);
  // A class folder beside a tar is an ImageFolder still; shards: is shards.
  ASSERT_TRUE(add_dataset_flag("train=" + dir.path() + "/classes", config).ok());
  EXPECT_EQ(config.datasets["train"].image_folder, dir.path() + "/classes");
  ASSERT_TRUE(add_dataset_flag("val=shards:" + dir.path() + "/tars", config).ok());
  EXPECT_EQ(config.datasets["val"].shards, dir.path() + "/tars");
}

TEST(ValidateConfig, RefusesWhatWouldFailEveryStream) {
  DaemonConfig config;
  EXPECT_TRUE(validate(config).ok());
  config.limits.max_streams = 0;
  EXPECT_NE(validate(config).message().find("max_streams"), std::string::npos);
  config = DaemonConfig{};
  config.handshake.max_pending_connections = 0;
  EXPECT_NE(validate(config).message().find("max_pending_connections"), std::string::npos);
  config = DaemonConfig{};
  config.handshake.timeout = std::chrono::milliseconds(0);
  EXPECT_NE(validate(config).message().find("handshake_timeout_ms"), std::string::npos);
  config = DaemonConfig{};
  config.datasets["gone"] = DatasetSource{.image_folder = "/nonexistent/forkfeed/train"};
  const Status s = validate(config);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find("dataset 'gone'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("/nonexistent/forkfeed/train does not exist"), std::string::npos) << s.message();
}

TEST_F(ConfigTest, ADatasetMayBeTarShardsWithItsLabelRule) {
  ASSERT_TRUE(load_config_file(file("datasets:\n  train: {shards: '/d/x-{0..1}.tar', shard_label: json, "
                                    "shard_label_field: y}\n"),
                               config_)
                  .ok());
  const DatasetSource& train = config_.datasets.at("train");
  EXPECT_EQ(train.shards, "/d/x-{0..1}.tar");
  EXPECT_EQ(train.shard_label, ShardLabel::kJson);
  EXPECT_EQ(train.shard_label_field, "y");
  expect_refused("datasets:\n  train: {shards: /d, shard_label: folder}\n", "datasets.train.shard_label",
                 "cls, json or class_folder");
  expect_refused("datasets:\n  train: {shards: /d, manifest: /m}\n", "datasets.train", "exactly one");
  ASSERT_TRUE(add_dataset_flag("val=shards:/d/v-{0..3}.tar", config_).ok());
  EXPECT_EQ(config_.datasets.at("val").shards, "/d/v-{0..3}.tar");
}

}  // namespace
}  // namespace forkfeed

namespace forkfeed {
namespace {

// Remote serving: listen needs a token file that holds a token, well-formed addresses and
// a named dataset; a token file alone is a mistake too. Each refusal says what to do.
TEST_F(ConfigTest, ListeningNeedsATokenAnAddressAndANamedDataset) {
  const std::string token = file("0123456789abcdef\n", "token");
  ASSERT_EQ(::chmod(token.c_str(), 0600), 0);
  ASSERT_TRUE(load_config_file(file("listen: [127.0.0.1:0, '[::1]:13337']\ntoken_file: " + token +
                                    "\ndatasets:\n  train: {image_folder: " + dir_.path() + "}\n"),
                               config_)
                  .ok());
  EXPECT_EQ(config_.listen, (std::vector<std::string>{"127.0.0.1:0", "[::1]:13337"}));
  EXPECT_EQ(config_.token_file, token);
  EXPECT_TRUE(validate(config_).ok()) << validate(config_).message();

  const auto refused = [&](DaemonConfig c, const std::string& expected) {
    const Status s = validate(c);
    EXPECT_FALSE(s.ok()) << "accepted; wanted: " << expected;
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  };
  DaemonConfig c = config_;
  c.token_file.clear();
  refused(c, "--listen needs --token-file");
  c = config_;
  c.token_file = file("", "empty-token");
  ASSERT_EQ(::chmod(c.token_file.c_str(), 0600), 0);
  refused(c, "is empty");
  c = config_;
  c.token_file = dir_.path() + "/missing";
  refused(c, "cannot be read");
  c = config_;
  c.token_file = dir_.path();
  refused(c, "is a directory, not a regular file");
  const std::string fifo = dir_.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  c.token_file = fifo;
  refused(c, "is a FIFO");  // refused at once, not waited on
  c = config_;
  c.listen = {"10.0.0.7"};
  refused(c, "no host and port");
  c = config_;
  c.listen = {"::1:80"};
  refused(c, "in brackets");
  c = config_;
  c.listen = {"127.0.0.1:99999"};
  refused(c, "0 to 65535");
  c = config_;
  c.datasets.clear();
  refused(c, "add --dataset NAME=PATH");
  c = config_;
  c.listen.clear();
  refused(c, "token_file is set but listen is not");
  expect_refused("listen: 127.0.0.1:1\n", "listen", "must be a list");
}

}  // namespace
}  // namespace forkfeed

namespace forkfeed {
namespace {

// Found from outside: a 1-byte token in a world-readable file was taken in silence. As ssh
// treats a private key, a token file that other users may read or write is refused
// (naming it, its mode and the remedy), and so is a token shorter than 16 bytes.
TEST_F(ConfigTest, ATokenFileOthersMayReadOrAShortTokenIsRefused) {
  DaemonConfig c;
  c.listen = {"127.0.0.1:0"};
  c.datasets["train"] = DatasetSource{.image_folder = dir_.path()};
  const auto check = [&](const std::string& text, mode_t mode) {
    c.token_file = file(text, "token");
    EXPECT_EQ(::chmod(c.token_file.c_str(), mode), 0);
    return validate(c);
  };
  const std::string token = "0123456789abcdef";  // 16 bytes: the fewest
  EXPECT_TRUE(check(token + "\n", 0600).ok()) << check(token + "\n", 0600).message();
  EXPECT_TRUE(check(token, 0400).ok());
  for (const mode_t mode : {0644, 0640, 0604, 0620, 0602, 0606}) {
    const Status s = check(token + "\n", mode);
    ASSERT_FALSE(s.ok()) << "mode " << std::oct << mode << " was accepted";
    char shown[16];
    std::snprintf(shown, sizeof shown, "%04o", static_cast<unsigned>(mode));
    EXPECT_NE(s.message().find(c.token_file), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(std::string("has mode ") + shown), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("chmod 600 " + c.token_file), std::string::npos) << s.message();
  }
  for (const std::string& short_token : {std::string("x"), token.substr(1), token.substr(1) + "\n\n"}) {
    const Status s = check(short_token, 0600);
    ASSERT_FALSE(s.ok()) << "'" << short_token << "' was accepted";
    EXPECT_NE(s.message().find("fewer than 16"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(c.token_file), std::string::npos) << s.message();
  }
}

// Found from outside: a token of 32 spaces was taken, and so was a token file of another
// user's when forkfeedd ran as root. Whitespace at either end is not the token, and what
// is left must hold 16 bytes that are not whitespace; a file that is not the user's own
// is refused, root's included, as ssh refuses a key file.
TEST_F(ConfigTest, AWhitespaceTokenOrAnotherUsersTokenFileIsRefused) {
  DaemonConfig c;
  c.listen = {"127.0.0.1:0"};
  c.datasets["train"] = DatasetSource{.image_folder = dir_.path()};
  const auto check = [&](const std::string& text) {
    c.token_file = file(text, "token");
    EXPECT_EQ(::chmod(c.token_file.c_str(), 0600), 0);
    return validate(c);
  };
  const std::string token = "0123456789abcdef";  // 16 bytes: the fewest
  EXPECT_TRUE(check(" \t" + token + " \r\n").ok()) << check(" \t" + token + " \r\n").message();
  EXPECT_TRUE(check("01234567 89abcdef").ok());  // 16 that are not whitespace, one that is
  for (const std::string& blank : {std::string(32, ' '), std::string("\t \r\n\v\f \n")}) {
    const Status s = check(blank);
    ASSERT_FALSE(s.ok()) << "a token of whitespace was accepted";
    EXPECT_NE(s.message().find(c.token_file), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("holds only whitespace"), std::string::npos) << s.message();
  }
  for (const std::string& thin : {std::string("  0123456789abcde  "), std::string("0123 4567 89ab cde\n"),
                                  std::string(31, ' ') + "x"}) {
    const Status s = check(thin);
    ASSERT_FALSE(s.ok()) << "'" << thin << "' was accepted";
    EXPECT_NE(s.message().find("that are not whitespace, fewer than 16"), std::string::npos) << s.message();
  }

  if (::geteuid() != 0) GTEST_SKIP() << "a file of another user's needs root to make";
  c.token_file = file(token + "\n", "token");
  ASSERT_EQ(::chmod(c.token_file.c_str(), 0600), 0);
  ASSERT_EQ(::chown(c.token_file.c_str(), 65534, 65534), 0);
  const Status s = validate(c);
  ASSERT_FALSE(s.ok()) << "a token file of uid 65534 was accepted by uid 0";
  EXPECT_NE(s.message().find(c.token_file), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("owned by uid 65534"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("chown 0 " + c.token_file), std::string::npos) << s.message();
}

}  // namespace
}  // namespace forkfeed
