// A COCO instances file's text as nlohmann's JSON parser reads it (tools/shard/coco_reader.cpp):
// mapped, its pages given back behind the parse, and what the parser's lexer holds of it
// counted, with the records the reader keeps, against --coco-max-mib.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "forkfeed/status.h"

namespace forkfeed {

// A read-only mapping of a whole file: its pages are the page cache's, not the process's,
// but those read count in its resident size until they are given back.
class MappedFile {
 public:
  // InvalidArgument for what is not a regular file (open_regular_file), IoError when it
  // cannot be mapped.
  static Result<MappedFile> open(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  ~MappedFile();
  std::string_view text() const { return {data_, size_}; }
  // Drops the pages wholly within [from, to) from the process; read again, they come back
  // from the file.
  void release(std::uint64_t from, std::uint64_t to) const;

 private:
  MappedFile() = default;
  const char* data_ = nullptr;
  std::uint64_t size_ = 0;
};

// What reading a COCO file holds beyond its mapping, against --coco-max-mib: the records
// the reader keeps, and the parser's buffers (JsonTextScan). Whichever adds the bytes that
// pass `max` refuses the file, saying which.
struct HeldBytes {
  std::uint64_t max = 0;
  std::uint64_t records = 0;
  std::uint64_t lexer = 0;
  bool over() const { return records + lexer > max; }
};

// Follows the text as nlohmann's lexer reads it, through the Cursors it is parsed from:
// json::sax_parse(scan.begin(), scan.end(), &reader). The lexer keeps every byte from the
// start of the last string, number or literal to the next one's start (its token_string,
// for messages), and that string once more (token_buffer), and neither gives its capacity
// back: a run of whitespace or brackets, or one long string, was held whole however little
// of it the reader kept (1 GB of spaces took 3.1 GB). So every 64 KiB the scan reads what
// the lexer was passed since the last string, number or literal the reader was given (a
// few bytes, in COCO's text), counts what it holds into HeldBytes at twice its size (a
// buffer's copy as it doubles), and passes no more of a run of whitespace, whose first
// byte separates tokens as well as the whole run. Past the bound it says why in status()
// and lets the token end where the lexer can end it cleanly (a string at its closing
// quote, a number after a digit), for the reader to stop at the next event: a text ended
// mid-token would have the parser copy what it holds into its error, thrice. The cursors
// share the scan's position; between two checks a byte costs the parser a compare more.
class JsonTextScan {
 public:
  class Cursor {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    Cursor() = default;
    reference operator*() const { return *scan_->at_; }
    Cursor& operator++() {
      if (++scan_->at_ == scan_->check_at_) [[unlikely]]
        scan_->check();
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(const Cursor& other) const { return *at_ == *other.at_; }

   private:
    friend class JsonTextScan;
    Cursor(JsonTextScan* scan, const char* const* at) : scan_(scan), at_(at) {}
    JsonTextScan* scan_ = nullptr;
    const char* const* at_ = nullptr;  // the scan's position, or its end
  };

  // REQUIRES: `file` and `held` outlive the scan and its cursors.
  JsonTextScan(const MappedFile& file, HeldBytes& held);
  JsonTextScan(const JsonTextScan&) = delete;
  JsonTextScan& operator=(const JsonTextScan&) = delete;

  Cursor begin() { return {this, &at_}; }
  Cursor end() { return {this, &end_}; }
  // The reader was given a string, key or literal: the lexer read up to here, and starts its
  // buffers anew at the next token.
  void after_token() { event_ = at_; }
  // A number: the lexer read one byte past it, which it reads again as the next token's.
  void after_number() { event_ = at_ - 1; }
  // Reads on to where the lexer is, for status() and last_string(): after the parse, and
  // in its error handler.
  void catch_up();
  // ResourceExhausted past the bound (the parse must stop at its next event); BadData for a
  // NUL byte outside a string, which the lexer takes for the end of the text (passing what
  // follows as nothing), once catch_up() has read to it; Ok while neither.
  const Status& status() const { return status_; }
  // The offset of the byte the lexer read last.
  std::uint64_t offset() const { return at_ == begin_ ? 0 : at(at_) - 1; }
  // Why the parser stopped at offset(), in words for what a user can fix, from its own
  // message `what`: more after the top value, which ended at `value_end` (two files in one,
  // a bad edit); a string that is not UTF-8 (a file saved as Latin-1); else its words, at
  // the file's line and column.
  std::string why_not_json(std::string_view what, std::optional<std::uint64_t> value_end);

 private:
  static constexpr std::uint64_t kCheckStep = std::uint64_t{64} << 10;
  static constexpr std::uint64_t kReleaseStep = std::uint64_t{16} << 20;

  // At check_at_: reads on, counts, ends a token or skips whitespace, gives pages back.
  void check();
  // What the lexer was passed up to `to`, as it takes it, into the fields below, from the
  // last token the reader was given.
  void read_to(const char* to);
  // What the lexer holds when it has read to `p`: in the token at token_, or in the gap
  // after it (at gap_).
  std::uint64_t held_at(const char* p, bool in_token) const;
  // Past the bound: status_, and where the token can end (else at_).
  void too_much_held();
  // Where the string or number being read ends (its closing quote, or the byte after it),
  // read on from at_ without keeping the pages read.
  const char* token_end();
  // The first byte from `from` not `within`, or the end.
  template <typename Within>
  const char* forward(const char* from, Within within);
  void release_behind(const char* p);
  std::uint64_t at(const char* p) const { return static_cast<std::uint64_t>(p - begin_); }
  const char* ahead(const char* p, std::uint64_t bytes) const {
    return p + std::min<std::uint64_t>(bytes, static_cast<std::uint64_t>(end_ - p));
  }

  const MappedFile& file_;
  HeldBytes& held_bytes_;
  const char* begin_;
  const char* end_;
  const char* at_;             // the next byte the lexer reads
  const char* check_at_;       // where check() runs next
  const char* read_;           // how far read_to() read
  const char* event_;          // where the lexer was when the reader was last given a token
  const char* token_;          // where the last string, number or literal starts
  const char* gap_;            // where the bytes after it start
  const char* nul_ = nullptr;  // the first NUL outside a string
  bool in_string_ = false, escaped_ = false, in_token_ = false;
  int unicode_ = 0;                   // the hex digits of a \\u escape still to come
  std::uint64_t skipped_ = 0;         // of the gap's whitespace, what check() did not pass
  std::uint64_t peak_ = 0;            // the most the lexer held
  const char* released_;              // the pages before it are given back
  const char* ends_token_ = nullptr;  // the token whose end token_end() found: ends_at_
  const char* ends_at_ = nullptr;
  Status status_;
};

}  // namespace forkfeed
