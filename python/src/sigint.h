// SigintWatch: Ctrl-C while the main thread waits for a batch. Python's SIGINT handler
// only sets a flag, read once the GIL is back, and a Loader's or Client's next() waits
// with the GIL released for as long as the workers take. While a SigintWatch lives, a C
// handler first calls the source's interrupt() (async-signal-safe: next() returns at
// once, whichever thread the signal hit), then Python's own handler; the caller then
// runs PyErr_CheckSignals(), which raises KeyboardInterrupt.
#pragma once

namespace forkfeed::python {

class SigintWatch {
 public:
  // What a SIGINT interrupts: interrupt(object), which must be async-signal-safe.
  struct Target {
    void (*interrupt)(void* object);
    void* object;
  };
  // A Target that calls source.interrupt(): a forkfeed::Loader or forkfeed::Client.
  template <typename Source>
  static Target target(Source& source) {
    return {[](void* object) { static_cast<Source*>(object)->interrupt(); }, &source};
  }

  // Watches only on Python's main thread (where Python runs signal handlers) and only
  // when SIGINT's handler is a function (not SIG_DFL or SIG_IGN). REQUIRES: the GIL.
  explicit SigintWatch(Target target);
  // Puts Python's handler back.
  ~SigintWatch();
  SigintWatch(const SigintWatch&) = delete;
  SigintWatch& operator=(const SigintWatch&) = delete;

  // Whether SIGINT arrived while watching.
  bool fired() const;

 private:
  Target target_;
  bool installed_ = false;
};

}  // namespace forkfeed::python
