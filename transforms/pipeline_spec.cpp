// parse_calls(): a small recursive-descent reader of torchvision's call syntax.
#include "transforms/pipeline_spec.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace forkfeed {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Result<std::vector<OpCall>> calls() {
    std::vector<OpCall> calls;
    skip_space();
    while (pos_ < text_.size()) {
      auto call = read_call();
      if (!call.ok()) return call.status();
      calls.push_back(std::move(call).value());
      skip_space();
      if (pos_ < text_.size() && !take(',')) return expected("',' between ops");
      skip_space();
    }
    if (calls.empty())
      return Status::InvalidArgument(
          "transform is empty: give train, eval or ops such as "
          "\"RandomResizedCrop(224), RandomHorizontalFlip()\"");
    return calls;
  }

 private:
  Result<OpCall> read_call() {
    const std::size_t start = pos_;
    OpCall call;
    call.name = read_name();
    if (call.name.empty()) return expected("an op's name, such as RandomResizedCrop");
    // "T.RandomCrop" and "transforms.RandomCrop" as copied from Python: the op is the last part.
    if (const auto dot = call.name.rfind('.'); dot != std::string::npos) call.name.erase(0, dot + 1);
    skip_space();
    if (!take('('))
      return expected("'(' after " + call.name + " (an op without arguments is written " + call.name + "())");
    skip_space();
    while (!take(')')) {
      std::string keyword;
      const std::size_t at = pos_;
      std::string name = read_name();
      skip_space();
      if (!name.empty() && peek() == '=') {
        ++pos_;
        keyword = std::move(name);
        skip_space();
      } else {
        pos_ = at;
      }
      auto value = read_value();
      if (!value.ok()) return value.status();
      if (keyword.empty()) {
        if (!call.keywords.empty())
          return expected("a keyword argument: in " + call.name +
                          "(...), a positional one follows one given by name");
        call.positional.push_back(std::move(value).value());
      } else {
        call.keywords.emplace_back(std::move(keyword), std::move(value).value());
      }
      skip_space();
      if (take(',')) {
        skip_space();
      } else if (peek() != ')') {
        return expected("',' or ')' in the arguments of " + call.name);
      }
    }
    call.text = std::string(text_.substr(start, pos_ - start));
    return call;
  }

  Result<SpecValue> read_value() {
    const std::size_t start = pos_;
    SpecValue v;
    if (peek() == '(' || peek() == '[') {
      const char close = peek() == '(' ? ')' : ']';
      ++pos_;
      skip_space();
      bool comma = false;
      while (!take(close)) {
        auto n = read_number();
        if (!n.ok()) return n.status();
        v.tuple.push_back(*n);
        skip_space();
        if (take(',')) {
          comma = true;
          skip_space();
        } else if (peek() != close) {
          return expected(std::string("',' or '") + close + "' in a tuple of numbers");
        }
      }
      // (0.5) is a number in Python, (0.5,) a tuple.
      if (close == ')' && v.tuple.size() == 1 && !comma) {
        v.kind = SpecValue::Kind::kNumber;
        v.number = v.tuple[0];
        v.integer = integer_literal(text_.substr(start + 1, pos_ - start - 2));
        v.tuple.clear();
      } else {
        v.kind = SpecValue::Kind::kTuple;
      }
    } else if (peek() == '\'' || peek() == '"') {
      const char quote = text_[pos_++];
      const std::size_t end = text_.find(quote, pos_);
      if (end == std::string_view::npos)
        return expected(std::string("the closing ") + quote + " of a string");
      v.kind = SpecValue::Kind::kWord;
      v.word = std::string(text_.substr(pos_, end - pos_));
      pos_ = end + 1;
    } else if (std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_') {
      v.word = read_name();
      if (v.word == "None") {
        v.kind = SpecValue::Kind::kNone;
      } else if (v.word == "True" || v.word == "False") {
        v.kind = SpecValue::Kind::kBool;
        v.number = v.word == "True" ? 1 : 0;
      } else {
        v.kind = SpecValue::Kind::kWord;
      }
    } else {
      auto n = read_number();
      if (!n.ok()) return n.status();
      v.kind = SpecValue::Kind::kNumber;
      v.number = *n;
      v.integer = integer_literal(text_.substr(start, pos_ - start));
    }
    v.text = std::string(text_.substr(start, pos_ - start));
    return v;
  }

  Result<double> read_number() {
    const std::string rest(text_.substr(pos_, 64));
    char* end = nullptr;
    const double n = std::strtod(rest.c_str(), &end);
    const std::size_t used = static_cast<std::size_t>(end - rest.c_str());
    if (used == 0 || !std::isfinite(n) || std::isalpha(static_cast<unsigned char>(rest[0]))) {
      return expected("a number");
    }
    pos_ += used;
    return n;
  }

  // Whether `text` (a number as written, maybe with spaces around) is an int in
  // Python: a sign and decimal digits, no point and no exponent.
  static bool integer_literal(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    if (!text.empty() && (text.front() == '-' || text.front() == '+')) text.remove_prefix(1);
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
  }

  // A name, dotted names included (InterpolationMode.BILINEAR); empty if none is here.
  std::string read_name() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '.')) {
      if (pos_ == start && std::isdigit(static_cast<unsigned char>(text_[pos_]))) break;
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool take(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  Status expected(const std::string& what) const {
    const std::string_view here = text_.substr(pos_, 24);
    return Status::InvalidArgument(
        "transform: expected " + what + " at character " + std::to_string(pos_ + 1) +
        (here.empty() ? std::string(" (the end)") : " (\"" + std::string(here) + "\")") + " of \"" +
        std::string(text_) + "\"");
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

Result<std::vector<OpCall>> parse_calls(std::string_view text) { return Reader(text).calls(); }

}  // namespace forkfeed
