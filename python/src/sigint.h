// SigintWatch: Ctrl-C while the main thread waits for a batch. Python's SIGINT handler
// only sets a flag, read once the GIL is back, and Loader::next() waits with the GIL
// released for as long as the workers take. While a SigintWatch lives, a C handler
// first calls Loader::interrupt() (async-signal-safe: next() returns within its 100 ms
// poll, whichever thread the signal hit), then Python's own handler; the caller then
// runs PyErr_CheckSignals(), which raises KeyboardInterrupt.
#pragma once

#include "forkfeed/loader.h"

namespace forkfeed::python {

class SigintWatch {
 public:
  // Watches only on Python's main thread (where Python runs signal handlers) and only
  // when SIGINT's handler is a function (not SIG_DFL or SIG_IGN). REQUIRES: the GIL.
  explicit SigintWatch(Loader& loader);
  // Puts Python's handler back.
  ~SigintWatch();
  SigintWatch(const SigintWatch&) = delete;
  SigintWatch& operator=(const SigintWatch&) = delete;

  // Whether SIGINT arrived while watching.
  bool fired() const;

 private:
  bool installed_ = false;
};

}  // namespace forkfeed::python
