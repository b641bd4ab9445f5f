// ProgressThread: the loop that keeps a remote stream's UCX worker going between calls.
#include "client/remote/progress_thread.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "client/remote/control_channel.h"
#include "client/remote/link_state.h"
#include "client/remote/ucx_receiver.h"

namespace forkfeed {

namespace {

void ring_eventfd(int fd) {
  const std::uint64_t one = 1;
  (void)!::write(fd, &one, sizeof one);
}

}  // namespace

void ProgressThread::drain(int eventfd) {
  std::uint64_t count = 0;
  (void)!::read(eventfd, &count, sizeof count);
}

Status ProgressThread::start() {
  for (UniqueFd* fd : {&news_fd_, &wake_fd_}) {
    *fd = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!fd->valid()) return Status::FromErrno("eventfd for a remote stream's thread", errno);
  }
  // The thread takes no signals: a trainer's Ctrl-C must reach the thread that waits in
  // next() (its poll returns EINTR), not this one. It inherits the mask in force here.
  sigset_t all, before;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  try {
    thread_ = std::make_unique<std::thread>(&ProgressThread::run, this);
  } catch (const std::system_error& e) {
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    return Status::ResourceExhausted(std::string("cannot start a remote stream's thread (") + e.what() +
                                     "): is the process at its limit of threads (ulimit -u)?");
  }
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  return Status::Ok();
}

void ProgressThread::wake() { ring_eventfd(wake_fd_.get()); }

void ProgressThread::stop() {
  if (!thread_) return;
  {
    std::lock_guard lock(state_.mu);
    stopping_ = true;
  }
  wake();
  thread_->join();
  thread_.reset();
}

void ProgressThread::run() {
  std::vector<pollfd> fds;
  while (true) {
    {
      std::lock_guard lock(state_.mu);
      if (stopping_) return;
      const std::uint64_t before = state_.news;
      receiver_.progress();
      receiver_.give_credits(control_);
      if (state_.news != before) ring_eventfd(news_fd_.get());
      if (!receiver_.arm()) continue;  // more came meanwhile
      fds = {{receiver_.event_fd(), POLLIN, 0},
             {receiver_.returned_fd(), POLLIN, 0},
             {wake_fd_.get(), POLLIN, 0}};
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      spdlog::error("forkfeed: a remote stream's thread cannot poll: {}; it stops", std::strerror(errno));
      (void)state_.fail("its thread could not poll: " + std::string(std::strerror(errno)));
      ring_eventfd(news_fd_.get());
      return;
    }
    for (std::size_t i : {1, 2}) {
      if (fds[i].revents != 0) drain(fds[i].fd);  // the slots freed are credits, which the loop gives
    }
  }
}

}  // namespace forkfeed
