// LoaderInternals: what forkfeedd reads and sets of a Loader in its own process, as
// values rather than through the JSON of state() and load_state(), and without
// recomputing what the Loader already holds (its order key hashes the whole index).
#pragma once

#include "forkfeed/loader.h"
#include "forkfeed/status.h"
#include "loader/checkpoint.h"
#include "loader/pass_position.h"

namespace forkfeed {

class LoaderInternals {
 public:
  // Where state() would record the loader: a complete pass is the next epoch at 0.
  static PassPosition::Seek position(const Loader& loader);
  // The key of the loader's order, computed once when it was opened.
  static const OrderKey& order_key(const Loader& loader);
  // load_state() of `to` in the loader's own order, with the same errors.
  static Status seek(Loader& loader, PassPosition::Seek to);
  // Whether next() reported an error that ends the loader: every later next() repeats
  // it. A bad file (on_error=fail), an interrupt or a full pool of slots does not.
  static bool broken(const Loader& loader);
};

}  // namespace forkfeed
