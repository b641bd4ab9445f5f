// LoaderInternals: what forkfeedd reads and sets of a Loader in its own process, as
// values rather than through the JSON of state() and load_state(), and without
// recomputing what the Loader already holds (its order key hashes the whole index).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "forkfeed/batch.h"
#include "forkfeed/loader.h"
#include "forkfeed/status.h"
#include "loader/checkpoint.h"
#include "loader/pass_position.h"
#include "plan/slot_count.h"
#include "plan/stream_plan.h"
#include "transport/arena_layout.h"

namespace forkfeed {

class LoaderInternals {
 public:
  // Loader::open() of options checked and resolved already (forkfeedd's open_stream,
  // forkfeed-bench's flags): nothing is checked or resolved again. What the fields add to
  // the slots is charged to `budget` (forkfeedd's admission); null: half of the memory,
  // as a Loader's own (memory_budget).
  static Result<std::unique_ptr<Loader>> open(const StreamPlan& plan, std::string_view state,
                                              std::shared_ptr<WorkerPool> pool, FieldBytesBudget budget = {});
  // Where state() would record the loader: a complete pass is the next epoch at 0.
  static PassPosition::Seek position(const Loader& loader);
  // The key of the loader's order, computed once when it was opened.
  static const OrderKey& order_key(const Loader& loader);
  // load_state() of `to` in the loader's own order, with the same errors.
  static Status seek(Loader& loader, PassPosition::Seek to);
  // Whether next() reported an error that ends the loader: every later next() repeats
  // it. A bad file (on_error=fail), an interrupt or a full pool of slots does not.
  static bool broken(const Loader& loader);
  // forkfeedd caps how many of a stream's tasks are in flight at once (the workers it
  // may keep busy, times prefetch), apart from its batch slots, which follow its options.
  // 0: no cap (a Loader's own: its slots).
  static void limit_in_flight(Loader& loader, std::uint32_t tasks);
  // Its batches are lent to another process (forkfeedd's client), which reads them in its
  // own mapping: none is ever copied aside here when every slot is held, as a Loader's own
  // caller's are; next() says so instead (every_slot_held()).
  static void lend_only(Loader& loader);
  // LoaderStats::worker_ns as of now. Unlike stats(), any thread may ask while another is
  // in next(): the workers add it up in shared memory, sample by sample.
  static std::uint64_t worker_ns(const Loader& loader);
  // Where its arena's batch slots lie and the fields placed in each (count 0 without a
  // schema): what forkfeedd tells its clients of the fields of a batch it lends.
  static const SlotGeometry& slot_geometry(const Loader& loader);
  static const SlotFields& slot_fields(const Loader& loader);

  // A pass on demand, for forkfeedd serving one rank from several daemons (a fan-in
  // client asks each for the batches it chose): begin_demand() starts a pass of `epoch`
  // in a new generation that issues nothing until want() names a batch; next_wanted()
  // then gives the wanted batches in the order wanted, each as next() would give it in a
  // whole pass (nullopt: every sample skipped; BadData: its bad file), with its index.
  // A seek (or a load_state, reset, set_epoch) ends it.
  static Status begin_demand(Loader& loader, std::uint64_t epoch);
  // InvalidArgument for a batch past the epoch's end; FailedPrecondition outside a pass
  // on demand.
  static Status want(Loader& loader, std::uint64_t batch);
  // Batches wanted and not yet given by next_wanted().
  static std::size_t wanted(const Loader& loader);
  struct Wanted {
    std::uint64_t index;
    Result<std::optional<Batch>> batch;
  };
  // REQUIRES: wanted() > 0, else FailedPrecondition. An error of the call itself (an
  // interrupt, a broken loader: see broken()) leaves the batch wanted.
  static Result<Wanted> next_wanted(Loader& loader);
};

}  // namespace forkfeed
