// ProgressThread: a RemoteLink's own thread. It progresses the link's UCX worker whenever
// it has work and gives the credits of the slots freed, so that batches move and credits
// go back while the trainer computes, not only while it waits in next(); and it tells the
// link's waits (news_fd()) when something they may wait for happened. It and the link's
// calls take turns on the whole link, under the link's one mutex (LinkState::mu).
#pragma once

#include <memory>
#include <thread>

#include "base/unique_fd.h"
#include "forkfeed/status.h"

namespace forkfeed {

class ControlChannel;
class UcxReceiver;
struct LinkState;

class ProgressThread {
 public:
  // All three outlive the thread.
  ProgressThread(LinkState& state, UcxReceiver& receiver, ControlChannel& control)
      : state_(state), receiver_(receiver), control_(control) {}

  // Starts the thread; it takes no signals.
  Status start();
  // Makes the thread look again at its fds (the receive arena's, once made) and at stop().
  void wake();
  // Stops and joins the thread: from then on, the caller alone calls the worker.
  void stop();
  // In a fork's child: the thread is the parent's, never joined nor destroyed here.
  void abandon() { (void)thread_.release(); }
  // Readable when the thread brought news (LinkState::news moved on).
  int news_fd() const { return news_fd_.get(); }
  // Empties an eventfd that was readable.
  static void drain(int eventfd);

 private:
  void run();

  LinkState& state_;
  UcxReceiver& receiver_;
  ControlChannel& control_;
  UniqueFd news_fd_;  // an eventfd the thread writes when LinkState::news moved on
  UniqueFd wake_fd_;  // an eventfd that makes the thread look again (at its fds, at stopping_)
  bool stopping_ = false;
  std::unique_ptr<std::thread> thread_;  // never joined nor destroyed in a fork's child
};

}  // namespace forkfeed
