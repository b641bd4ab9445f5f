// run_command(): posix_spawn into a new process group, poll waitpid against a deadline.
#include "tests/testing/command.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

extern char** environ;

namespace forkfeed::testing {
namespace {

std::string out_path(const std::string& dir) { return dir + "/command.stdout"; }
std::string err_path(const std::string& dir) { return dir + "/command.stderr"; }

}  // namespace

std::string CommandOutcome::describe() const {
  return "exit " + std::to_string(code) + ", signal " + std::to_string(signal) + "\nstdout:\n" + out +
         "\nstderr:\n" + err;
}

StartedCommand start_command(const std::vector<std::string>& args, const std::string& dir) {
  StartedCommand command{-1, args.at(0), dir};
  const std::string out_path = testing::out_path(dir);
  const std::string err_path = testing::err_path(dir);
  std::vector<std::string> storage = args;
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  // Its own group, so that a timeout can kill the tool and everything it started.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, storage[0].c_str(), &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    ADD_FAILURE() << "cannot start " << storage[0] << ": " << std::strerror(rc);
    return command;
  }
  command.pid = pid;
  return command;
}

CommandOutcome wait_command(const StartedCommand& command, std::chrono::seconds timeout) {
  CommandOutcome outcome;
  const pid_t pid = command.pid;
  if (pid < 0) return outcome;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) {
      ADD_FAILURE() << "waitpid: " << std::strerror(errno);
      return outcome;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << command.name << " did not finish within " << timeout.count() << " s; killed";
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  outcome.exited = WIFEXITED(status);
  outcome.code = outcome.exited ? WEXITSTATUS(status) : -1;
  outcome.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  outcome.out = read_file(out_path(command.dir));
  outcome.err = read_file(err_path(command.dir));
  return outcome;
}

CommandOutcome run_command(const std::vector<std::string>& argv, const std::string& dir,
                           std::chrono::seconds timeout) {
  return wait_command(start_command(argv, dir), timeout);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace forkfeed::testing
