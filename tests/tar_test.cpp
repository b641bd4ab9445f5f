// Tar shards: what TarWriter writes scan_tar() and GNU tar read back exactly; archives
// GNU tar writes in each of its formats are scanned to the right members; a file that is
// not a whole tar is refused with a message naming the shard and the member.
//
// Over 300 lines on purpose: one case per header form and per refusal, sharing the
// helpers that make archives by hand and by GNU tar.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "formats/tar_scan.h"
#include "tests/testing/command.h"
#include "tests/testing/encoded_images.h"
#include "tests/testing/temp_dataset.h"
#include "tools/shard/tar_writer.h"

namespace forkfeed {
namespace {

namespace fs = std::filesystem;
using Files = std::vector<std::pair<std::string, std::string>>;  // name, contents

std::span<const std::byte> bytes_of(std::string_view text) { return std::as_bytes(std::span(text)); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

std::string read_at(const std::string& path, std::uint64_t offset, std::uint64_t size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string data(size, '\0');
  EXPECT_EQ(::pread(fd.get(), data.data(), size, static_cast<off_t>(offset)), static_cast<ssize_t>(size));
  return data;
}

std::string pattern(std::size_t size, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(size, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

void write_shard(const std::string& path, const Files& files) {
  Result<TarWriter> writer = TarWriter::create(path);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  for (const auto& [name, data] : files) ASSERT_TRUE(writer->add(name, bytes_of(data)).ok()) << name;
  const Status s = writer->finish();
  ASSERT_TRUE(s.ok()) << s.message();
}

std::vector<TarMember> scan_ok(const std::string& path) {
  Result<std::vector<TarMember>> members = scan_tar_file(path);
  EXPECT_TRUE(members.ok()) << members.status().message();
  return members.ok() ? std::move(members).value() : std::vector<TarMember>{};
}

// The members found are exactly `files`, in order, with their bytes where they say.
void expect_members(const std::string& shard, const Files& files) {
  const std::vector<TarMember> members = scan_ok(shard);
  ASSERT_EQ(members.size(), files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(members[i].name, files[i].first);
    EXPECT_EQ(members[i].size, files[i].second.size()) << files[i].first;
    EXPECT_EQ(members[i].offset % 512, 0u) << files[i].first;
    EXPECT_EQ(read_at(shard, members[i].offset, members[i].size), files[i].second) << files[i].first;
  }
}

// The refusal of `shard`: BadData, naming the shard and each of `parts`.
void expect_refused(const std::string& shard, const std::vector<std::string>& parts) {
  Result<std::vector<TarMember>> members = scan_tar_file(shard);
  ASSERT_FALSE(members.ok()) << shard << " was accepted";
  EXPECT_EQ(members.status().code(), Status::Code::kBadData) << members.status().message();
  EXPECT_NE(members.status().message().find(shard), std::string::npos) << members.status().message();
  for (const std::string& part : parts) {
    EXPECT_NE(members.status().message().find(part), std::string::npos)
        << "'" << part << "' not in: " << members.status().message();
  }
}

// A 512-byte header made here, independently of the code under test.
std::string raw_header(std::string_view name, std::string_view size_field, char type,
                       bool signed_sum = false) {
  std::string h(512, '\0');
  h.replace(0, name.size(), name);
  h.replace(100, 8, "0000644", 8);
  h.replace(124, size_field.size(), size_field);
  h[156] = type;
  h.replace(257, 8,
            "ustar\0"
            "00",
            8);
  h.replace(148, 8, 8, ' ');
  long sum = 0;
  for (char c : h) sum += signed_sum ? static_cast<signed char>(c) : static_cast<unsigned char>(c);
  char field[24];
  std::snprintf(field, sizeof field, "%06lo", static_cast<unsigned long>(sum));
  h.replace(148, 7, field, 7);  // six digits and a NUL; the space stays
  return h;
}

std::string octal_size(std::uint64_t size) {
  char field[24];
  std::snprintf(field, sizeof field, "%011llo", static_cast<unsigned long long>(size));
  return std::string(field, 12);
}

std::string padded(std::string data) { return data.append((512 - data.size() % 512) % 512, '\0'); }

std::string end_blocks() { return std::string(1024, '\0'); }

// A name of `size` bytes: directories of 50 bytes, then a file name, so that every
// component fits a file system and the ustar prefix split is possible.
std::string long_name(std::size_t size, char fill) {
  std::string name;
  while (name.size() + 51 < size - 10) name += std::string(50, fill) + "/";
  name += std::string(size - name.size() - 4, fill);
  return name + ".jpg";
}

std::string gnu_tar() {
  for (const char* path : {"/usr/bin/tar", "/bin/tar"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

TEST(TarWriter, ShardReadsBackWithExactOffsetsSizesAndBytes) {
  testing::TempDir dir;
  const std::string shard = dir.path() + "/s.tar";
  const Files files = {
      {"n01_1.jpg", pattern(1000, 1)},
      {"n01_1.cls", "7"},
      {"empty.txt", ""},
      {"block.bin", pattern(512, 2)},
      {std::string(100, 'h'), "100"},
      {long_name(150, 'p'), pattern(3000, 3)},
      {long_name(300, 'q'), "300"},
      {std::string(101, 'n'), "no slash to split at"},
  };
  write_shard(shard, files);
  expect_members(shard, files);
  const std::vector<TarMember> members = scan_ok(shard);
  ASSERT_EQ(members.size(), files.size());
  EXPECT_EQ(members[0].offset, 512u);
  EXPECT_EQ(members[1].offset, 512u + 1024 + 512);
  EXPECT_EQ(fs::file_size(shard) % 10240, 0u);
  EXPECT_FALSE(fs::exists(shard + ".tmp"));
}

TEST(TarWriter, GnuTarListsAndExtractsWhatItWrites) {
  const std::string tar = gnu_tar();
  ASSERT_FALSE(tar.empty()) << "GNU tar not found in /usr/bin or /bin; tools/setup.sh installs it";
  testing::TempDir dir;
  const std::string shard = dir.path() + "/s.tar";
  const Files files = {{"a.jpg", pattern(700, 4)},
                       {long_name(150, 'x'), pattern(5000, 5)},
                       {long_name(300, 'y'), pattern(20, 6)},
                       {std::string(120, 'z'), "pax path"}};
  write_shard(shard, files);
  const testing::CommandOutcome list = testing::run_command({tar, "-tf", shard}, dir.path());
  ASSERT_TRUE(list.exited && list.code == 0) << list.describe();
  EXPECT_EQ(list.err, "");
  std::string names;
  for (const auto& [name, data] : files) names += name + "\n";
  EXPECT_EQ(list.out, names);
  const testing::CommandOutcome verbose = testing::run_command({tar, "-tvf", shard}, dir.path());
  EXPECT_TRUE(verbose.exited && verbose.code == 0 && verbose.err.empty()) << verbose.describe();
  for (const auto& [name, data] : files) {
    const testing::CommandOutcome extract = testing::run_command({tar, "-xOf", shard, name}, dir.path());
    ASSERT_TRUE(extract.exited && extract.code == 0) << extract.describe();
    EXPECT_EQ(extract.out, data) << name;
  }
}

TEST(TarWriter, SameMembersGiveIdenticalBytes) {
  testing::TempDir dir;
  const Files files = {{"a.jpg", pattern(3000, 7)}, {"a.cls", "3"}, {long_name(300, 'd'), "x"}};
  write_shard(dir.path() + "/1.tar", files);
  write_shard(dir.path() + "/2.tar", files);
  const std::string first = read_file(dir.path() + "/1.tar");
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first, read_file(dir.path() + "/2.tar"));
  // Nothing of the moment or the user that wrote it: mtime 0, owner 0:0 without names.
  ASSERT_GE(first.size(), 512u);
  EXPECT_EQ(first.substr(136, 12), std::string("00000000000\0", 12));
  EXPECT_EQ(first.substr(108, 16), std::string("0000000\0"
                                               "0000000\0",
                                               16));
  EXPECT_EQ(first.substr(265, 64), std::string(64, '\0'));
}

TEST(TarWriter, UnfinishedWriterLeavesNoFileBehind) {
  testing::TempDir dir;
  const std::string shard = dir.path() + "/s.tar";
  {
    Result<TarWriter> writer = TarWriter::create(shard);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    ASSERT_TRUE(writer->add("a.jpg", bytes_of("abc")).ok());
    EXPECT_TRUE(fs::exists(shard + ".tmp"));
    TarWriter moved = std::move(writer).value();  // the moved-from one must not remove it
    EXPECT_TRUE(fs::exists(shard + ".tmp"));
  }
  EXPECT_FALSE(fs::exists(shard));
  EXPECT_FALSE(fs::exists(shard + ".tmp"));
  // An old shard stays as it was until finish() replaces it.
  write_file(shard, "old");
  {
    Result<TarWriter> writer = TarWriter::create(shard);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    ASSERT_TRUE(writer->add("a.jpg", bytes_of("new")).ok());
  }
  EXPECT_EQ(read_file(shard), "old");
  EXPECT_FALSE(fs::exists(shard + ".tmp"));
}

TEST(TarWriter, RefusesNamesReadersCannotTakeBackAndAddsAfterFinish) {
  testing::TempDir dir;
  Result<TarWriter> writer = TarWriter::create(dir.path() + "/s.tar");
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  for (std::string_view bad : {std::string_view(""), std::string_view("dir/"), std::string_view("a\0b", 3)}) {
    const Status s = writer->add(bad, bytes_of("x"));
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.message();
  }
  ASSERT_TRUE(writer->finish().ok());
  EXPECT_EQ(writer->add("late.jpg", bytes_of("x")).code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(writer->finish().ok());
  expect_members(dir.path() + "/s.tar", {});
}

// What GNU tar makes of a tree in `format`: its regular files are the members, in the
// order given, and the directory and the symbolic link are not.
void expect_gnu_tar_format(const std::string& format, std::size_t longest_name) {
  const std::string tar = gnu_tar();
  ASSERT_FALSE(tar.empty()) << "GNU tar not found in /usr/bin or /bin; tools/setup.sh installs it";
  testing::TempDir dir;
  const std::string root = dir.path() + "/root";
  Files files = {{"short.jpg", pattern(1234, 8)}, {"empty.cls", ""}, {"sub/x.jpg", pattern(512, 9)}};
  if (longest_name > 100) files.emplace_back(long_name(150, 'l'), pattern(600, 10));
  if (longest_name > 255) files.emplace_back(long_name(300, 'm'), pattern(70, 11));
  std::vector<std::string> argv = {
      tar, "--format=" + format, "--no-recursion", "-cf", dir.path() + "/s.tar", "-C", root, "sub"};
  for (const auto& [name, data] : files) {
    fs::create_directories(fs::path(root + "/" + name).parent_path());
    write_file(root + "/" + name, data);
    argv.push_back(name);
  }
  fs::create_symlink("short.jpg", root + "/link.jpg");
  argv.push_back("link.jpg");
  const testing::CommandOutcome made = testing::run_command(argv, dir.path());
  ASSERT_TRUE(made.exited && made.code == 0) << made.describe();
  expect_members(dir.path() + "/s.tar", files);
}

TEST(TarScan, GnuFormatArchive) { expect_gnu_tar_format("gnu", 300); }
TEST(TarScan, PaxFormatArchive) { expect_gnu_tar_format("pax", 300); }
TEST(TarScan, UstarFormatArchive) { expect_gnu_tar_format("ustar", 150); }
TEST(TarScan, V7FormatArchive) { expect_gnu_tar_format("v7", 99); }

TEST(TarScan, PaxGlobalHeadersAreSkipped) {
  testing::TempDir dir;
  const std::string tar = gnu_tar();
  if (!tar.empty()) {
    write_file(dir.path() + "/a.jpg", "by gnu tar");
    const testing::CommandOutcome made =
        testing::run_command({tar, "--format=pax", "--pax-option=comment=hello", "-cf", dir.path() + "/g.tar",
                              "-C", dir.path(), "a.jpg"},
                             dir.path());
    ASSERT_TRUE(made.exited && made.code == 0) << made.describe();
    ASSERT_EQ(read_file(dir.path() + "/g.tar")[156], 'g');
    expect_members(dir.path() + "/g.tar", {{"a.jpg", "by gnu tar"}});
  }
  // A global `path` names no member; an 'x' one after it does.
  const std::string global = "19 path=global.jpg\n";
  const std::string local = "18 path=local.jpg\n";
  write_file(dir.path() + "/h.tar", raw_header("g", octal_size(global.size()), 'g') + padded(global) +
                                        raw_header("a.jpg", octal_size(3), '0') + padded("abc") +
                                        raw_header("x", octal_size(local.size()), 'x') + padded(local) +
                                        raw_header("b.jpg", octal_size(2), '0') + padded("de") +
                                        end_blocks());
  expect_members(dir.path() + "/h.tar", {{"a.jpg", "abc"}, {"local.jpg", "de"}});
}

TEST(TarScan, ReadsBase256SizesAndSignedChecksums) {
  testing::TempDir dir;
  const std::string shard = dir.path() + "/big.tar";
  const std::uint64_t size = std::uint64_t{9} << 30;  // over the 8 GiB octal fields hold
  std::string field(12, '\0');
  field[0] = static_cast<char>(0x80);
  for (int i = 0; i < 8; ++i) field[11 - i] = static_cast<char>(size >> (8 * i));
  write_file(shard, raw_header("big.bin", field, '0'));
  // Sparse: the data and the end blocks are holes that read as zeros.
  ASSERT_EQ(::truncate(shard.c_str(), static_cast<off_t>(512 + size + 1024)), 0);
  EXPECT_EQ(scan_ok(shard), (std::vector<TarMember>{{"big.bin", 512, size}}));

  const std::string name = "caf\xc3\xa9.jpg";  // bytes over 127 make the two sums differ
  write_file(shard, raw_header(name, octal_size(1), '0', /*signed_sum=*/true) + padded("c") + end_blocks());
  expect_members(shard, {{name, "c"}});
}

TEST(TarScan, EndOfArchiveForms) {
  testing::TempDir dir;
  const std::string member = raw_header("a.jpg", octal_size(3), '0') + padded("abc");
  for (const std::string& end :
       {std::string(), std::string(512, '\0'), end_blocks() + "ignored after the end"}) {
    write_file(dir.path() + "/e.tar", member + end);
    expect_members(dir.path() + "/e.tar", {{"a.jpg", "abc"}});
  }
}

TEST(TarScan, VisitorErrorStopsTheScan) {
  testing::TempDir dir;
  const std::string shard = dir.path() + "/s.tar";
  write_shard(shard, {{"a", "1"}, {"b", "2"}, {"c", "3"}});
  UniqueFd fd(::open(shard.c_str(), O_RDONLY | O_CLOEXEC));
  int seen = 0;
  const Status s = scan_tar(fd.get(), shard, fs::file_size(shard), [&](TarMember&& m) {
    ++seen;
    return m.name == "b" ? Status::Internal("stop at b") : Status::Ok();
  });
  EXPECT_EQ(s.message(), "stop at b");
  EXPECT_EQ(seen, 2);
}

TEST(TarScan, RefusesFilesThatAreNotTar) {
  testing::TempDir dir;
  const std::string shard = dir.path() + "/x.tar";
  write_file(shard, "");
  expect_refused(shard, {"is empty"});
  write_file(shard, pattern(4096, 12));
  expect_refused(shard, {"is not a tar file (bad header checksum at offset 0)"});
  const std::vector<std::byte> jpeg = testing::encode(testing::photo(64, 48, 1), ".jpg");
  write_file(shard, std::string_view(reinterpret_cast<const char*>(jpeg.data()), jpeg.size()));
  expect_refused(shard, {"is not a tar file"});
  write_file(shard, "short");
  expect_refused(shard, {"is not a tar file", "less than one 512-byte tar header"});
}

TEST(TarScan, RefusesTruncatedShards) {
  testing::TempDir dir;
  const std::string whole = dir.path() + "/whole.tar";
  write_shard(whole, {{"a.jpg", pattern(1000, 13)}, {"b.jpg", pattern(2000, 14)}});
  const std::string bytes = read_file(whole);
  const std::string shard = dir.path() + "/cut.tar";
  write_file(shard, bytes.substr(0, 1536 + 100));  // in b.jpg's header
  expect_refused(shard, {"is truncated",
                         "a tar header needs 512 bytes at offset 1536, the file ends at 1636 (after member "
                         "'a.jpg'); re-copy the shard"});
  write_file(shard, bytes.substr(0, 2048 + 1000));  // in b.jpg's data
  expect_refused(shard,
                 {"is truncated: member 'b.jpg' needs 2000 bytes at offset 2048, the file ends at 3048",
                  "re-copy the shard"});
  write_file(shard, bytes.substr(0, 2048 + 2000));  // b.jpg's padding is missing
  expect_refused(shard, {"member 'b.jpg' needs 2048 bytes"});
}

TEST(TarScan, AShardShorterThanItsSizeNamesTheHeaderCut) {
  // A shard that shrank after its size was taken: the headers are read ahead (small
  // members), and the one cut is still the one named, by its own 512 bytes.
  testing::TempDir dir;
  const std::string shard = dir.path() + "/s.tar";
  write_shard(shard, {{"a.jpg", pattern(1000, 13)}, {"b.jpg", pattern(2000, 14)}});
  const std::string whole = read_file(shard);
  write_file(shard, whole.substr(0, 1536 + 100));  // in b.jpg's header
  UniqueFd fd(::open(shard.c_str(), O_RDONLY | O_CLOEXEC));
  std::vector<std::string> names;
  const Status s = scan_tar(fd.get(), shard, whole.size(), [&](TarMember&& m) {
    names.push_back(m.name);
    return Status::Ok();
  });
  EXPECT_EQ(names, std::vector<std::string>{"a.jpg"});
  EXPECT_NE(s.message().find("a tar header needs 512 bytes at offset 1536, the file ends at 1636"),
            std::string::npos)
      << s.message();
}

TEST(TarScan, RefusesCorruptHeaders) {
  testing::TempDir dir;
  const std::string shard = dir.path() + "/s.tar";
  write_shard(shard, {{"a.jpg", pattern(1000, 15)}, {"b.jpg", "b"}});
  std::string bytes = read_file(shard);
  bytes[1536 + 3] ^= 0x20;  // b.jpg's name
  write_file(shard, bytes);
  expect_refused(shard, {"corrupt tar header at offset 1536 (bad checksum) after member 'a.jpg'"});

  write_file(shard, raw_header("c.jpg", "0000000z12\0", '0') + padded("x") + end_blocks());
  expect_refused(shard, {"'c.jpg'", "size field that is not an octal number"});

  for (const std::string& records : {std::string("99 path=x\n"), std::string("10 pathxy\n"),
                                     std::string("x path=a\n"), std::string("11 size=1x\n")}) {
    write_file(shard, raw_header("a.jpg", octal_size(1), '0') + padded("a") +
                          raw_header("p", octal_size(records.size()), 'x') + padded(records) +
                          raw_header("b.jpg", octal_size(1), '0') + padded("b") + end_blocks());
    expect_refused(shard, {"malformed pax header at offset 1024", "after member 'a.jpg'"});
  }
}

}  // namespace
}  // namespace forkfeed
