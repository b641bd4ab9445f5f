// SigintWatch: see sigint.h.
#include "python/src/sigint.h"

#include <signal.h>

#include <atomic>

#include "python/src/bindings.h"  // Python.h, and with it PyThread_get_thread_ident

namespace forkfeed::python {
namespace {

// One watch at a time: only the main thread installs one.
std::atomic<const SigintWatch::Target*> g_target = nullptr;
std::atomic<bool> g_fired = false;
struct sigaction g_previous {};

void on_sigint(int sig, siginfo_t* info, void* context) {
  g_fired.store(true);
  if (const SigintWatch::Target* target = g_target.load()) target->interrupt(target->object);
  if ((g_previous.sa_flags & SA_SIGINFO) != 0) {
    if (g_previous.sa_sigaction != nullptr) g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  }
}

bool on_main_thread() {
  static const unsigned long main_thread =
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  return PyThread_get_thread_ident() == main_thread;
}

}  // namespace

SigintWatch::SigintWatch(Target target) : target_(target) {
  if (!on_main_thread()) return;
  struct sigaction current {};
  if (sigaction(SIGINT, nullptr, &current) != 0) return;
  const bool is_function = (current.sa_flags & SA_SIGINFO) != 0 ||
                           (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
  if (!is_function) return;
  g_previous = current;
  g_fired.store(false);
  g_target.store(&target_);
  struct sigaction ours {};
  ours.sa_sigaction = &on_sigint;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  installed_ = sigaction(SIGINT, &ours, nullptr) == 0;
  if (!installed_) g_target.store(nullptr);
}

SigintWatch::~SigintWatch() {
  if (!installed_) return;
  sigaction(SIGINT, &g_previous, nullptr);
  g_target.store(nullptr);
}

bool SigintWatch::fired() const { return installed_ && g_fired.load(); }

}  // namespace forkfeed::python
