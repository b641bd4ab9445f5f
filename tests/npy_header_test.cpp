// The .npy header reader: what numpy.save writes (every dtype an array field carries, 0-d
// and empty arrays, format versions 1.0 to 3.0) is read as NumPy reads it, and anything
// else, hostile or merely unusual, is BadData that says what is wrong, never a crash or
// a wrong size: cut at any byte, lengths past the member, shapes whose size overflows.
#include "formats/npy_header.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testing/command.h"
#include "tests/testing/temp_dataset.h"

namespace forkfeed {
namespace {

using namespace std::string_literals;

constexpr std::string_view kHeader = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";

// A .npy member of format `version` (1, 2 or 3) with the header text `dict`, padded as
// numpy pads it (spaces, a newline, the data at a multiple of 64), then `data_bytes`
// bytes of data.
std::string npy(std::string_view dict, std::uint64_t data_bytes, int version = 1) {
  const std::size_t preamble = version == 1 ? 10 : 12;
  std::string text(dict);
  text.append((64 - (preamble + text.size() + 1) % 64) % 64, ' ');
  text += '\n';
  std::string out = "\x93NUMPY"s;
  out += static_cast<char>(version);
  out += '\0';
  for (std::size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>(text.size() >> (8 * i) & 0xFF);
  return out + text + std::string(data_bytes, '\x5a');
}

Result<NpyHeader> parse(const std::string& member) { return parse_npy_header(member, member.size()); }

// The message of a member that must be refused as BadData.
std::string refusal(const std::string& member, std::uint64_t member_bytes) {
  const Result<NpyHeader> header = parse_npy_header(member, member_bytes);
  if (header.ok()) return "(accepted)";
  EXPECT_EQ(header.status().code(), Status::Code::kBadData) << header.status().message();
  return header.status().message();
}

TEST(NpyHeader, ReadsWhatNumpySaveWrites) {
  const std::string member = npy(kHeader, 48);
  const Result<NpyHeader> header = parse(member);
  ASSERT_TRUE(header.ok()) << header.status().message();
  EXPECT_EQ(header->dtype, ElementType::kFloat32);
  EXPECT_EQ(header->shape, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(header->data_offset, 128u);  // numpy pads the header to a multiple of 64
  EXPECT_EQ(header->data_bytes, 48u);
  EXPECT_EQ(header->elements(), 12u);
  EXPECT_EQ(npy_header_bytes(member.substr(0, kNpyPreambleBytes)).value(), 128u);
}

TEST(NpyHeader, TakesWhatAHandWrittenHeaderMayVary) {
  struct Case {
    std::string dict;
    std::vector<std::int64_t> shape;
    std::uint64_t data_bytes;
  };
  const std::vector<Case> cases = {
      {"{'shape': (2,), 'descr': '<f4', 'fortran_order': False}", {2}, 8},
      {"{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (2, 1, )}", {2, 1}, 16},
      {"  {'descr':'<u2','fortran_order':False,'shape':(5,)}", {5}, 10},
      {"{\n 'descr': '|u1',\n 'fortran_order': False,\n 'shape': ( 7 , ),\n}", {7}, 7},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (7,)}", {7}, 7},
      {"{'descr': '|b1', 'fortran_order': False, 'shape': ()}", {}, 1},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (0,)}", {0}, 0},
      {"{'descr': '<f2', 'fortran_order': False, 'shape': (4, 0, 9)}", {4, 0, 9}, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dict);
    const Result<NpyHeader> header = parse(npy(c.dict, c.data_bytes));
    ASSERT_TRUE(header.ok()) << header.status().message();
    EXPECT_EQ(header->shape, c.shape);
    EXPECT_EQ(header->data_bytes, c.data_bytes);
  }
}

TEST(NpyHeader, ReadsVersionsTwoAndThree) {
  for (const int version : {2, 3}) {
    const std::string member = npy(kHeader, 48, version);
    const Result<NpyHeader> header = parse(member);
    ASSERT_TRUE(header.ok()) << header.status().message();
    EXPECT_EQ(header->data_offset, 128u);
    EXPECT_EQ(header->data_bytes, 48u);
  }
}

TEST(NpyHeader, NamesEveryDtypeAsNumpyDoes) {
  const std::map<std::string, std::pair<std::string, std::size_t>> expected = {
      {"|b1", {"bool", 1}},   {"|i1", {"int8", 1}},    {"<i2", {"int16", 2}},   {"<i4", {"int32", 4}},
      {"<i8", {"int64", 8}},  {"|u1", {"uint8", 1}},   {"<u2", {"uint16", 2}},  {"<u4", {"uint32", 4}},
      {"<u8", {"uint64", 8}}, {"<f2", {"float16", 2}}, {"<f4", {"float32", 4}}, {"<f8", {"float64", 8}},
  };
  for (const auto& [descr, name_size] : expected) {
    const std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (3,), }";
    const Result<NpyHeader> header = parse(npy(dict, 3 * name_size.second));
    ASSERT_TRUE(header.ok()) << descr << ": " << header.status().message();
    EXPECT_EQ(to_string(header->dtype), name_size.first);
    EXPECT_EQ(element_bytes(header->dtype), name_size.second);
  }
  EXPECT_EQ(npy_shape_text({}), "()");
  EXPECT_EQ(npy_shape_text({8}), "(8,)");
  EXPECT_EQ(npy_shape_text({3, 4}), "(3, 4)");
}

TEST(NpyHeader, RefusesWhatABatchCannotHoldAsItIs) {
  struct Case {
    std::string dict;
    std::string message;
  };
  const auto with = [](std::string descr, std::string order, std::string shape) {
    return "{'descr': " + descr + ", 'fortran_order': " + order + ", 'shape': " + shape + ", }";
  };
  std::string dims_33 = "(";
  for (int i = 0; i < 33; ++i) dims_33 += "1, ";
  dims_33 += ")";
  const std::vector<Case> cases = {
      {with("'>f4'", "False", "(3,)"), "the .npy header's dtype '>f4' is big-endian; save it little-endian"},
      {with("'|O'", "False", "(3,)"), "dtype '|O' is object: it holds Python objects"},
      {with("[('a', '<f4'), ('b', '<i8')]", "False", "(3,)"), "structured array"},
      {with("'<U5'", "False", "(3,)"), "dtype '<U5' is not one forkfeed reads (bool, int8"},
      {with("'<c8'", "False", "(3,)"), "dtype '<c8' is not one forkfeed reads"},
      {with("'<f16'", "False", "(3,)"), "dtype '<f16' is not one"},
      {with("'<M8[s]'", "False", "(3,)"), "dtype '<M8[s]' is not one"},
      {with("'=f4'", "False", "(3,)"),
       "descr '=f4' gives no byte order forkfeed reads; numpy.save writes '<f4'"},
      {with("'|f4'", "False", "(3,)"), "descr '|f4' gives no byte order"},
      {with("'f4'", "False", "(3,)"), "descr 'f4' has no byte order"},
      {with("''", "False", "(3,)"), "descr is empty"},
      {with("'<f4'", "True", "(3, 2)"),
       "fortran_order is True: the array is stored column-major; save it in C "
       "order with np.save(f, np.ascontiguousarray(a))"},
      {with("'<f4'", "1", "(3,)"), "fortran_order is '1, 'shape'"},
      {with("'<f4'", "False", "(3, -1)"), "the .npy header's shape (3, -1) has a negative dimension"},
      {with("'<f4'", "False", "(3)"), "shape (3) is a number in parentheses, not a tuple: (3,) is"},
      {with("'<f4'", "False", "[3, 4]"), "shape is '[3, 4]"},
      {with("'<f4'", "False", "(3.0,)"), "shape (3.0,) is not a tuple of whole numbers"},
      {with("'<f4'", "False", "(03,)"), "shape (03,) is not a tuple of whole numbers"},
      {with("'<f4'", "False", "(3L, 4L)"), "shape (3L, 4L) is not a tuple of whole numbers"},
      {with("'<f4'", "False", "(3 4)"), "shape (3 4) is not a tuple"},
      {with("'<f4'", "False", "(,)"), "shape (,) is not a tuple"},
      {with("'<f4'", "False", "(3,"), "shape '(3,, }'"},
      {with("'<f4'", "False", "(4294967296, 4294967296)"),
       "shape (4294967296, 4294967296) of float32 would need more than 2^63 bytes"},
      {with("'<f4'", "False", "(4611686018427387904, 4611686018427387904, 0)"), "would need more than 2^63"},
      {with("'<f4'", "False", "(9223372036854775808,)"), "has a dimension above 2^63"},
      {with("'<f4'", "False", "(99999999999999999999999,)"), "has a dimension above 2^63"},
      {with("'<f4'", "False", dims_33), "has more than 32 dimensions"},
      {"{'descr': '<f4', 'fortran_order': False}", "the .npy header has no 'shape'"},
      {"{'descr': '<f4', 'shape': (3,)}", "has no 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (3,)}", "has no 'descr' (the dtype)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}",
       "has the key 'extra'; a .npy header holds 'descr', 'fortran_order' and 'shape' only"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}",
       "has the key 'descr' twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} junk", "has 'junk' after its dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}}", "has '}' after its dict"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}", "has ''fortran_order': F"},
      {"{'descr' '<f4'}", "has no ':' after the key 'descr'"},
      {"{descr: '<f4'}", "has 'descr: '<f4'}' where a key should be"},
      {"{'descr: '<f4'}", "has no ':' after the key 'descr: '"},
      {"{'descr': '<f4", "has a string with no closing quote"},
      {"{'descr': '<\\x66'}", "a '\\' escape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", "has the end after the value of 'shape'"},
      {"['descr', '<f4']", "is not a Python dict: it starts with '['descr', '<f4']"},
      {"", "is not a Python dict: it starts with the end"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'caf\xc3\xa9': 1}",
       "has the byte 0xc3 at 70, which is not printable ASCII"},
      {"{'descr': '<f4',\x01 'fortran_order': False, 'shape': (3,)}", "has the byte 0x01 at 26"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dict);
    const std::string message = refusal(npy(c.dict, 12), npy(c.dict, 12).size());
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
  }
}

TEST(NpyHeader, RefusesAPreambleThatIsNotNumpys) {
  struct Case {
    std::string member;
    std::string message;
  };
  std::string v4 = npy(kHeader, 48);
  v4[6] = 4;
  std::string v11 = npy(kHeader, 48);
  v11[7] = 1;
  std::string long_header = npy(kHeader, 48, 2);
  long_header[10] = '\x01';  // a header length of 65536 + 116
  const std::vector<Case> cases = {
      {"", "the .npy member is empty"},
      {"PK\x03\x04zipped", "not a .npy array: it starts with 'PK\\x03\\x04zipp...', not NumPy's \\x93NUMPY"},
      {"\x93NUMPX", "not a .npy array"},
      {"\x93NUM", "the .npy member ends after 4 bytes, inside its preamble"},
      {"\x93NUMPY\x01"s, "ends after 7 bytes, inside its preamble"},
      {"\x93NUMPY\x01\x00\x10"s, "ends after 9 bytes, inside its preamble of 10"},
      {"\x93NUMPY\x02\x00\x10\x00\x00"s, "ends after 11 bytes, inside its preamble of 12"},
      {v4, "format version 4.0 is not one forkfeed reads (1.0, 2.0, 3.0)"},
      {v11, "format version 1.1 is not one"},
      {long_header, "the .npy header is 65652 bytes long, over 10000 (numpy.load's own limit)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.member);
    const std::string message = refusal(c.member, c.member.size());
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
  }
}

TEST(NpyHeader, TheMemberMustBeTheHeaderAndTheDataExactly) {
  const std::string member = npy(kHeader, 48);
  EXPECT_EQ(
      refusal(member.substr(0, 150), 150),
      "the .npy member is 150 bytes, but its header (float32, shape (3, 4)) says 128 + 48 = 176: the data "
      "is cut short");
  EXPECT_EQ(refusal(member + "x", member.size() + 1),
            "the .npy member is 177 bytes, but its header (float32, shape (3, 4)) says 128 + 48 = 176: "
            "junk follows the data");
  // A header that says it is longer than the member: the member's end, not the header's.
  EXPECT_EQ(refusal(member.substr(0, 40), 40),
            "the .npy header is 128 bytes long by its preamble, past the end of the 40-byte member");
}

// Any cut of a member, with the member's size as the cut's or as the whole's: BadData
// (the cut member), InvalidArgument (too little of a whole one read), never a crash.
TEST(NpyHeader, EveryCutOfAMemberIsRefusedCleanly) {
  for (const int version : {1, 2}) {
    const std::string member = npy(kHeader, 48, version);
    for (std::size_t cut = 0; cut < member.size(); ++cut) {
      SCOPED_TRACE(std::to_string(version) + " cut at " + std::to_string(cut));
      const std::string start = member.substr(0, cut);
      const Result<NpyHeader> alone = parse_npy_header(start, cut);
      ASSERT_FALSE(alone.ok());
      EXPECT_EQ(alone.status().code(), Status::Code::kBadData);
      const Result<NpyHeader> of_whole = parse_npy_header(start, member.size());
      if (cut < 128) {
        ASSERT_FALSE(of_whole.ok());
        const bool preamble_cut = cut < (version == 1 ? 10u : 12u);
        EXPECT_EQ(of_whole.status().code(),
                  preamble_cut ? Status::Code::kBadData : Status::Code::kInvalidArgument)
            << of_whole.status().message();
      } else {
        EXPECT_TRUE(of_whole.ok()) << of_whole.status().message();  // the header is all it reads
      }
    }
  }
}

// Random bytes changed in a valid member: every outcome is a header that adds up to the
// member or BadData (the test's value is in running it under the sanitizers).
TEST(NpyHeader, ChangedBytesGiveAHeaderThatFitsOrBadData) {
  std::mt19937 rng(36);
  const std::string valid = npy(kHeader, 48);
  int accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string member = valid;
    const int changes = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < changes; ++i) member[rng() % 128] = static_cast<char>(rng() % 256);
    const Result<NpyHeader> header = parse(member);
    if (header.ok()) {
      ++accepted;
      ASSERT_EQ(header->data_offset + header->data_bytes, member.size());
    } else {
      ASSERT_EQ(header.status().code(), Status::Code::kBadData) << header.status().message();
    }
  }
  EXPECT_GT(accepted, 0);  // changes in the padding or to equal bytes keep it valid
}

// Arrays numpy itself writes: every dtype, 0-d and empty arrays, versions 2.0 and 3.0,
// and the ones it writes that forkfeed refuses. The script prints what NumPy sees of
// each file and keeps its raw data beside it.
TEST(NpyHeader, ReadsTheFilesNumpyWrites) {
  testing::TempDir dir;
  const std::string script = R"(
import sys, numpy as np
out = sys.argv[1]
arrays = {
    "f4": np.arange(8, dtype="<f4") / 3, "u1": np.arange(24, dtype="u1").reshape(2, 3, 4),
    "i8_0d": np.array(-7, dtype="<i8"), "b1": np.array([True, False, True]),
    "f2_empty": np.zeros((0,), dtype="<f2"), "f8_empty2": np.zeros((3, 0), dtype="<f8"),
    "i1": np.arange(-3, 3, dtype="i1"), "i2": np.arange(5, dtype="<i2"), "i4": np.arange(6, dtype="<i4"),
    "u2": np.arange(3, dtype="<u2"), "u4": np.arange(2, dtype="<u4"), "u8": np.arange(4, dtype="<u8"),
    "f8_5d": np.ones((1, 2, 1, 2, 1), dtype="<f8"),
}
for name, a in arrays.items():
    np.save(out + "/" + name + ".npy", a)
    open(out + "/" + name + ".raw", "wb").write(a.tobytes())
    print(name, a.dtype.name, a.shape, sep="\t")
for version in ((2, 0), (3, 0)):
    a = np.arange(12, dtype="<f4").reshape(3, 4)
    name = "v%d" % version[0]
    with open(out + "/" + name + ".npy", "wb") as f:
        np.lib.format.write_array(f, a, version=version)
    open(out + "/" + name + ".raw", "wb").write(a.tobytes())
    print(name, a.dtype.name, a.shape, sep="\t")
np.save(out + "/refused_fortran.npy", np.asfortranarray(np.zeros((2, 3), dtype="<f4")))
np.save(out + "/refused_big.npy", np.arange(3, dtype=">i4"))
np.save(out + "/refused_object.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
np.save(out + "/refused_struct.npy", np.zeros(3, dtype=[("a", "<f4"), ("b", "<i8")]))
np.save(out + "/refused_str.npy", np.array(["ab", "c"]))
with open(out + "/refused_npz.npy", "wb") as f:
    np.savez(f, a=np.zeros(3))
)";
  const testing::CommandOutcome o =
      testing::run_command({"/usr/bin/python3", "-c", script, dir.path()}, dir.path());
  ASSERT_TRUE(o.exited && o.code == 0) << o.describe();
  const std::vector<std::string> lines = testing::lines_of(o.out);
  ASSERT_EQ(lines.size(), 15u) << o.out;
  for (const std::string& line : lines) {
    std::istringstream fields(line);
    std::string name, dtype, shape;
    std::getline(fields, name, '\t');
    std::getline(fields, dtype, '\t');
    std::getline(fields, shape, '\t');
    SCOPED_TRACE(name);
    const std::string member = testing::read_file(dir.path() + "/" + name + ".npy");
    const Result<NpyHeader> header = parse(member);
    ASSERT_TRUE(header.ok()) << header.status().message();
    EXPECT_EQ(to_string(header->dtype), dtype);
    EXPECT_EQ(npy_shape_text(header->shape), shape);  // Python prints a tuple as npy_shape_text does
    EXPECT_EQ(header->data_offset % 64, 0u);          // numpy aligns the data
    EXPECT_TRUE(member.substr(header->data_offset) == testing::read_file(dir.path() + "/" + name + ".raw"));
  }
  const std::map<std::string, std::string> refused = {
      {"refused_fortran", "fortran_order is True"}, {"refused_big", "dtype '>i4' is big-endian"},
      {"refused_object", "dtype '|O' is object"},   {"refused_struct", "structured array"},
      {"refused_str", "dtype '<U2' is not one"},    {"refused_npz", "not a .npy array: it starts with 'PK"},
  };
  for (const auto& [name, message] : refused) {
    const std::string member = testing::read_file(dir.path() + "/" + name + ".npy");
    const std::string got = refusal(member, member.size());
    EXPECT_NE(got.find(message), std::string::npos) << name << ": " << got;
  }
}

}  // namespace
}  // namespace forkfeed
