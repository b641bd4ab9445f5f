// Status and Result<T>: how every forkfeed API reports failure. Messages are written
// for the user: they name the thing that failed and say what to do about it.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace forkfeed {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk,
    kInvalidArgument,  // bad option or argument
    kNotFound,         // missing file or directory
    kIoError,          // an OS call failed
    kBadData,          // a file could not be decoded, or a manifest is malformed
    kWorkerDied,       // a worker process exited while work was in flight
    kResourceExhausted,
    kInternal,
    // New codes go last: the codes before keep their numbers, which cross the wire.
    kDeadlineExceeded,  // a wait ran past its deadline
    kCancelled,         // the caller interrupted a wait (Loader::interrupt); nothing changed
    kUnavailable,       // forkfeedd went away; connect again with the last state()
    // The world is not what the call needs, and retrying will not change it: a shard
    // changed since it was indexed, a Loader used in a process other than its opener's.
    kFailedPrecondition,
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return {Code::kInvalidArgument, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {Code::kNotFound, std::move(msg)}; }
  static Status IoError(std::string msg) { return {Code::kIoError, std::move(msg)}; }
  static Status BadData(std::string msg) { return {Code::kBadData, std::move(msg)}; }
  static Status WorkerDied(std::string msg) { return {Code::kWorkerDied, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) { return {Code::kResourceExhausted, std::move(msg)}; }
  static Status Internal(std::string msg) { return {Code::kInternal, std::move(msg)}; }
  static Status DeadlineExceeded(std::string msg) { return {Code::kDeadlineExceeded, std::move(msg)}; }
  static Status Cancelled(std::string msg) { return {Code::kCancelled, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {Code::kUnavailable, std::move(msg)}; }
  static Status FailedPrecondition(std::string msg) { return {Code::kFailedPrecondition, std::move(msg)}; }
  // The one place where errno becomes a Status: "<context>: <strerror(err)>".
  // ENOENT maps to kNotFound, everything else to kIoError; os_error() keeps `err`.
  static Status FromErrno(std::string_view context, int err);
  // The error |code| with |msg|, for codes that crossed a process boundary: one that is
  // kOk or no Code at all becomes kInternal, so an error never turns into success.
  static Status FromCode(Code code, std::string msg);
  // A code's name on the wire and in logs ("invalid_argument", ...); "internal" for a
  // number that is no Code. CodeNamed is its inverse, kInternal for an unknown name.
  static std::string_view CodeName(Code code);
  static Code CodeNamed(std::string_view name);

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // The errno of the OS call that failed (FromErrno), 0 for any other error.
  int os_error() const { return os_error_; }
  // The same error with ": <what>" appended, e.g. the file it concerns.
  Status about(std::string_view what) const {
    Status s(code_, message_ + ": " + std::string(what));
    s.os_error_ = os_error_;
    return s;
  }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
  int os_error_ = 0;
};

// Thrown only by the range-for convenience API of Loader; every other API returns
// Status or Result.
class Error : public std::runtime_error {
 public:
  explicit Error(Status status) : std::runtime_error(status.message()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  // REQUIRES: !ok()
  const Status& status() const { return std::get<Status>(v_); }
  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  // Returns the value, or throws forkfeed::Error.
  T value_or_throw() && {
    if (!ok()) throw Error(status());
    return std::get<T>(std::move(v_));
  }

 private:
  std::variant<T, Status> v_;
};

}  // namespace forkfeed
