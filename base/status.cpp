// Status::FromErrno: the one place where errno becomes an error value; the table of
// code names, the one place where a code becomes a word and back.
#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "forkfeed/status.h"

namespace forkfeed {

Status Status::FromErrno(std::string_view context, int err) {
  std::string msg(context);
  msg += ": ";
  msg += std::strerror(err);
  Status s = err == ENOENT ? NotFound(std::move(msg)) : IoError(std::move(msg));
  s.os_error_ = err;
  return s;
}

namespace {

constexpr std::array<std::pair<Status::Code, std::string_view>, 12> kCodeNames = {{
    {Status::Code::kOk, "ok"},
    {Status::Code::kInvalidArgument, "invalid_argument"},
    {Status::Code::kNotFound, "not_found"},
    {Status::Code::kIoError, "io_error"},
    {Status::Code::kBadData, "bad_data"},
    {Status::Code::kWorkerDied, "worker_died"},
    {Status::Code::kResourceExhausted, "resource_exhausted"},
    {Status::Code::kInternal, "internal"},
    {Status::Code::kDeadlineExceeded, "deadline_exceeded"},
    {Status::Code::kCancelled, "cancelled"},
    {Status::Code::kUnavailable, "unavailable"},
    {Status::Code::kFailedPrecondition, "failed_precondition"},
}};

}  // namespace

Status Status::FromCode(Code code, std::string msg) {
  for (const auto& [c, name] : kCodeNames) {
    if (c == code && c != Code::kOk) return Status(c, std::move(msg));
  }
  return Internal(std::move(msg));
}

std::string_view Status::CodeName(Code code) {
  for (const auto& [c, name] : kCodeNames) {
    if (c == code) return name;
  }
  return "internal";
}

Status::Code Status::CodeNamed(std::string_view name) {
  for (const auto& [c, n] : kCodeNames) {
    if (n == name) return c;
  }
  return Code::kInternal;
}

}  // namespace forkfeed
