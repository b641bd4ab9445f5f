// CacheFolder: the folder's checks, its reads and its atomic writes.
#include "dataset/cache_folder.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/atomic_file.h"
#include "base/dir_stream.h"
#include "base/printable.h"
#include "base/regular_file.h"

namespace forkfeed {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// mkdir -p, new folders 0700; Ok when `dir` is (now) a directory.
Status make_dirs(const std::string& dir, const std::string& what) {
  for (std::size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string prefix = dir.substr(0, slash);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::FromErrno("cannot create " + what + " folder " + printable(prefix), errno);
    }
    if (slash == std::string::npos) break;
  }
  return Status::Ok();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

// "<pid>.<n>.<host>" of a temporary file's name: its writer.
struct Writer {
  pid_t pid = 0;
  std::string host;
};
std::optional<Writer> writer_of(std::string_view name) {
  constexpr std::string_view kMark = ".tmp.";  // of any cache file's temporary
  const std::size_t at = name.find(kMark);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = name.substr(at + kMark.size());
  const std::size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  Writer w;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, w.pid);
  if (ec != std::errc() || end != rest.data() + dot || w.pid <= 0) return std::nullopt;
  rest.remove_prefix(dot + 1);
  const std::size_t host = rest.find('.');
  if (host == std::string_view::npos) return std::nullopt;
  w.host = std::string(rest.substr(host + 1));
  return w;
}

}  // namespace

std::string CacheFolder::default_dir(std::string_view kind) {
  const std::string sub(kind);
  if (std::string dir = env("FORKFEED_CACHE_DIR"); !dir.empty()) return dir + "/" + sub;
  if (std::string dir = env("XDG_CACHE_HOME"); !dir.empty()) return dir + "/forkfeed/" + sub;
  if (std::string home = env("HOME"); !home.empty()) return home + "/.cache/forkfeed/" + sub;
  return "";
}

CacheFolder::CacheFolder(std::string dir, std::string what) : dir_(std::move(dir)), what_(std::move(what)) {
  trusted_ = !dir_.empty() && check().ok();
}

std::optional<std::string> CacheFolder::read(const std::string& name, std::uint64_t max_bytes) const {
  if (!trusted_) return std::nullopt;
  Result<std::string> file = read_regular_file(dir_ + "/" + name, "", SizeLimit{max_bytes, "the limit", ""});
  if (!file.ok()) return std::nullopt;
  return std::move(file).value();
}

Status CacheFolder::write(const std::string& name, std::string_view bytes) const {
  if (dir_.empty()) {
    return Status::NotFound("no folder for " + what_ + ": set FORKFEED_CACHE_DIR, XDG_CACHE_HOME or HOME");
  }
  if (Status s = make_dirs(dir_, what_); !s.ok()) return s;
  if (Status s = check(); !s.ok()) return s;  // as it is now, made by us or not
  std::call_once(cleaned_, [this] { remove_stale_temporaries(); });
  // A name of this process and call: ranks on one machine may cache the same file at
  // once, and must not write into each other's temporary (a fixed suffix would be shared).
  // The host and pid let a later write tell that a writer died, and remove its file.
  static std::atomic<std::uint64_t> calls{0};
  static const std::string host = host_name();
  AtomicFile::Options options{
      .temp_suffix = ".tmp." + std::to_string(::getpid()) + "." + std::to_string(calls++) + "." + host,
      .mode = 0600,
      .sync = false,           // a torn file fails its checksum, and is made again
      .check_target = false};  // the folder is ours (check)
  auto file = AtomicFile::create(dir_ + "/" + name, what_, std::move(options));
  if (!file.ok()) return file.status();
  if (Status s = file->write(bytes); !s.ok()) return s;
  return file->commit();
}

Status CacheFolder::check() const {
  struct stat st {};
  if (::lstat(dir_.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return Status::FromErrno(std::string("cannot stat ") + what_ + " folder " + printable(dir_), errno);
  }
  const std::string named = what_ + " folder " + printable(dir_);
  if (S_ISLNK(st.st_mode)) {
    return Status::InvalidArgument(named +
                                   " is a symbolic link; not used, since its files decide where "
                                   "samples lie and what their labels are: set FORKFEED_CACHE_DIR to "
                                   "the folder it points to");
  }
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(named + " is not a directory");
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::InvalidArgument(named + " (owner uid " + std::to_string(st.st_uid) + ", mode " + mode +
                                   ") is not this user's alone; not used, since a file someone else put "
                                   "there could mislabel samples: make it yours and chmod go-w it, or set "
                                   "FORKFEED_CACHE_DIR to a folder of your own");
  }
  return Status::Ok();
}

void CacheFolder::remove_stale_temporaries() const {
  Result<DirStream> stream = DirStream::open(dir_);
  if (!stream.ok()) return;
  const std::string host = host_name();
  const auto now = std::chrono::system_clock::now();
  std::vector<std::string> stale;
  (void)stream->for_each(dir_, [&](std::string_view name, bool is_dir) {
    const std::optional<Writer> w = is_dir ? std::nullopt : writer_of(name);
    if (!w || w->host != host || ::kill(w->pid, 0) == 0 || errno != ESRCH) return;
    struct stat st {};
    const std::string path = dir_ + "/" + std::string(name);
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    // A writer in another PID namespace on a host of the same name would look dead:
    // its file is young, and kept.
    const auto written = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec));
    if (now - written > std::chrono::minutes(1)) stale.push_back(path);
  });
  for (const std::string& path : stale) ::unlink(path.c_str());
}

}  // namespace forkfeed
