// A COCO file's mapping and what nlohmann's lexer holds of it (tools/shard/coco_text.h).
#include "tools/shard/coco_text.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <string_view>
#include <utility>

#include "base/printable.h"
#include "base/regular_file.h"
#include "base/utf8.h"

namespace forkfeed {
namespace {

std::string mib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  auto file = open_regular_file(path, "COCO annotations", {std::uint64_t{1} << 40, "the limit of", ""});
  if (!file.ok()) return file.status();
  MappedFile m;
  m.size_ = file->size;
  if (m.size_ == 0) return m;
  void* at = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, file->fd.get(), 0);
  if (at == MAP_FAILED) return Status::FromErrno("mmap of COCO annotations " + printable(path), errno);
  m.data_ = static_cast<const char*>(at);
  ::madvise(at, m.size_, MADV_SEQUENTIAL);
  return m;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

void MappedFile::release(std::uint64_t from, std::uint64_t to) const {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  from = (from + page - 1) / page * page;
  to = std::min(to, size_) / page * page;
  // Only advice: a page it leaves is still the file's, and costs nothing but memory.
  if (from < to) ::madvise(const_cast<char*>(data_) + from, to - from, MADV_DONTNEED);
}

JsonTextScan::JsonTextScan(const MappedFile& file, HeldBytes& held)
    : file_(file),
      held_bytes_(held),
      begin_(file.text().data()),
      end_(file.text().data() + file.text().size()),
      at_(begin_),
      check_at_(ahead(begin_, kCheckStep)),
      read_(begin_),
      event_(begin_),
      token_(begin_),
      gap_(begin_),
      released_(begin_) {}

namespace {

// The bytes of a number or literal (true, false, null), which the lexer keeps together.
constexpr std::array<bool, 256> kTokenBytes = [] {
  std::array<bool, 256> bytes{};
  for (int c = '0'; c <= '9'; ++c) bytes[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) bytes[c] = true;
  for (const char c : {'-', '+', '.', 'E'}) bytes[static_cast<unsigned char>(c)] = true;
  return bytes;
}();
bool token_byte(char c) { return kTokenBytes[static_cast<unsigned char>(c)]; }

}  // namespace

std::uint64_t JsonTextScan::held_at(const char* p, bool in_token) const {
  // A token's bytes twice (token_string and token_buffer), the gap's after it once, less
  // the whitespace check() did not pass.
  if (in_token) return 2 * (at(p) - at(token_));
  return 2 * (at(gap_) - at(token_)) + (at(p) - at(gap_)) - skipped_;
}

void JsonTextScan::read_to(const char* to) {
  if (event_ > read_) {  // between two tokens, outside any
    read_ = token_ = gap_ = event_;
    in_string_ = in_token_ = escaped_ = false;
    unicode_ = 0;
    skipped_ = 0;
  }
  // The state in locals, so that the loop keeps it in registers.
  const char* p = read_;
  const char* token = token_;
  const char* gap = gap_;
  bool in_string = in_string_, in_token = in_token_;
  const auto token_at = [&](const char* start) {
    // The lexer starts its buffers anew; a span of a few bytes (COCO's are) cannot be the
    // most it held that counts.
    if (start - token > 1024) [[unlikely]] {
      token_ = token, gap_ = gap;
      peak_ = std::max(peak_, held_at(start, false));
    }
    token = start;
    skipped_ = 0;
  };
  while (p < to) {
    if (in_string) {
      if (unicode_ > 0) {
        --unicode_;
        ++p;
      } else if (escaped_) {
        escaped_ = false;
        if (*p++ == 'u') unicode_ = 4;
      } else {
        while (p < to && *p != '"' && *p != '\\') ++p;  // its plain bytes at once
        if (p == to) break;
        if (*p == '\\') {
          escaped_ = true;
        } else {
          in_string = false;
          gap = p + 1;
        }
        ++p;
      }
      continue;
    }
    if (token_byte(*p)) {
      if (!in_token) token_at(p);
      in_token = true;
      while (++p < to && token_byte(*p)) {
      }
      continue;
    }
    if (in_token) gap = p;
    in_token = false;
    if (*p == '"') {
      token_at(p);
      in_string = true;
    } else if (*p == '\0' && nul_ == nullptr) [[unlikely]] {
      nul_ = p;
    }
    ++p;
  }
  token_ = token, gap_ = gap;
  in_string_ = in_string, in_token_ = in_token;
  read_ = std::max(read_, to);
  peak_ = std::max(peak_, held_at(read_, in_string_ || in_token_));
}

void JsonTextScan::catch_up() {
  read_to(at_);
  if (nul_ != nullptr && status_.ok()) {
    status_ =
        Status::BadData("not JSON: a NUL byte at byte " + std::to_string(at(nul_)) +
                        ", outside any string, where JSON has none (nlohmann's parser would end the text "
                        "there): is the file cut short and padded, or not a COCO file?");
  }
}

std::string JsonTextScan::why_not_json(std::string_view what, std::optional<std::uint64_t> value_end) {
  catch_up();
  const std::string_view text = file_.text();
  if (value_end) {
    const std::size_t more = std::min(text.find_first_not_of(" \t\r\n", *value_end + 1), text.size());
    return "not JSON: more follows the end of its value at byte " + std::to_string(more) + ": " +
           quoted_start(text.substr(more), 40) + "; a COCO file is one JSON object";
  }
  const std::uint64_t last = offset();
  if (token_ != end_ && *token_ == '"') {  // in the last string read, or after it
    const std::string_view bytes = text.substr(at(token_) + 1, last - at(token_));
    if (const std::size_t valid = valid_utf8_prefix(bytes); valid < bytes.size()) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(bytes[valid]));
      return "not JSON: the string at byte " + std::to_string(at(token_)) + " is not UTF-8 (byte " +
             std::to_string(at(token_) + 1 + valid) + " is " + hex +
             "): JSON text is UTF-8; convert the file from the encoding it was saved in "
             "(iconv -f latin1 -t utf-8, for Latin-1)";
    }
  }
  // nlohmann's line and column count what it was passed, one byte of each long run of
  // whitespace: these are the file's. Its message starts "[json.exception.parse_error.101]
  // parse error at line 1, column 9: ".
  const std::string_view before = text.substr(0, last);
  const std::size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
  if (const std::size_t column = what.find("column "); column != std::string_view::npos) {
    if (const std::size_t colon = what.find(": ", column); colon != std::string_view::npos)
      what.remove_prefix(colon + 2);
  }
  return "not JSON at byte " + std::to_string(last) + " (line " +
         std::to_string(std::count(before.begin(), before.end(), '\n') + 1) + ", column " +
         std::to_string(last - line_start + 1) + "): " + printable_cut(what, 300);
}

void JsonTextScan::check() {
  read_to(at_);
  check_at_ = ahead(at_, kCheckStep);
  held_bytes_.lexer = 2 * peak_;
  if (held_bytes_.over()) too_much_held();
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  if (!in_string_ && !in_token_ && at_ != begin_ && at_ != end_ && space(at_[-1]) && space(*at_)) {
    const char* from = at_;
    at_ = forward(at_, space);  // the lexer has its separator
    skipped_ += at(at_) - at(from);
    read_ = at_;
    check_at_ = ahead(at_, kCheckStep);
  }
  if (at(at_) - at(released_) >= kReleaseStep) release_behind(at_);
}

void JsonTextScan::too_much_held() {
  const char* end = token_end();
  if (status_.ok()) {
    std::string what, remedy;
    if (in_string_) {
      what = "a string of " + mib(at(end) + 1 - at(token_)) + " at byte " + std::to_string(at(token_));
      remedy = "or leave that string out of the file";
    } else if (in_token_) {
      what = "a number of " + mib(at(end) - at(token_)) + " at byte " + std::to_string(at(token_));
      remedy = "or check that it is a COCO file";
    } else {
      const char* stretch = forward(
          gap_, [](char c) { return std::string_view(" \t\r\n[]{},:").find(c) != std::string_view::npos; });
      what = "a stretch of " + mib(at(stretch) - at(gap_)) +
             " of brackets and commas (empty lists or objects) at byte " + std::to_string(at(gap_));
      remedy = "or check that it is a COCO file";
    }
    const std::uint64_t left = held_bytes_.max - std::min(held_bytes_.max, held_bytes_.records);
    status_ = Status::ResourceExhausted(
        what + ", which the JSON parser holds whole (a string twice): more than the " + mib(left) +
        " that --coco-max-mib " + std::to_string(held_bytes_.max >> 20) +
        " leaves beside the records read; raise --coco-max-mib, " + remedy);
  }
  // Where the token can end: a string at its closing quote, once the last byte passed
  // ends a character and no escape is open or begins next; a number after a digit.
  // Elsewhere (brackets) the next event comes within a byte or two.
  const char last = at_[-1];
  bool ends = false;
  if (in_string_) {
    ends = !escaped_ && unicode_ == 0 && static_cast<unsigned char>(last) < 0x80 &&
           (at_ == end_ || *at_ != '\\');
  } else if (in_token_) {
    ends = last >= '0' && last <= '9';
  }
  if (ends) {
    at_ = end;
    read_ = end;
    check_at_ = ahead(at_, kCheckStep);
  } else if (in_string_ || in_token_) {
    check_at_ = ahead(at_, 1);  // not here: at the next byte
  }
}

const char* JsonTextScan::token_end() {
  if (ends_token_ == token_) return ends_at_;  // read on once a token
  ends_token_ = token_;
  if (in_string_) {
    bool escaped = escaped_;
    int unicode = unicode_;
    return ends_at_ = forward(at_, [&](char c) {
             if (unicode > 0) return --unicode, true;
             const bool within = escaped || c != '"';
             escaped = !escaped && c == '\\';
             return within;
           });
  }
  if (in_token_) {
    return ends_at_ = forward(at_, [](char c) {
             return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
           });
  }
  ends_token_ = nullptr;
  return at_;
}

template <typename Within>
const char* JsonTextScan::forward(const char* from, Within within) {
  const char* q = from;
  for (; q != end_ && within(*q); ++q) {
    if (at(q) - at(released_) >= kReleaseStep) [[unlikely]]
      release_behind(q);  // as the lexer's reading would
  }
  return q;
}

void JsonTextScan::release_behind(const char* p) {
  // The lexer reads forward only and the reader copies what it keeps: the pages behind
  // are read again only for a message.
  file_.release(at(released_), at(p));
  released_ = p;
}

}  // namespace forkfeed
