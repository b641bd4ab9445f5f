// ServedStream: one stream forkfeedd serves — its Loader, the consumer channel the
// client maps, the batches lent to the client and the pass id its deliveries carry.
// StreamSession owns the connection and its requests; this owns what an open_stream
// made. Only the session thread touches it. Destroying it stops and reaps the loader's
// workers, unmaps the arena and gives the admission ticket back.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "daemon/admission.h"
#include "daemon/lent_batches.h"
#include "forkfeed/loader.h"
#include "forkfeed/status.h"
#include "plan/stream_plan.h"
#include "protocol/consumer_channel.h"

namespace forkfeed {

class ServedStream {
 public:
  struct Opened {
    std::unique_ptr<ServedStream> stream;
    nlohmann::json reply;       // the open_stream reply's body (StreamOpened)
    std::vector<UniqueFd> fds;  // the arena (read-only), the channel's memfd and its two eventfds
  };
  // Opens the loader for `resolved`, the options forkfeedd completed, checked and
  // admitted under `ticket`, from `state` if not empty, on the daemon's `pool`. `about`
  // (who asked, for what) heads the stream's stats. A stream on `demand` makes only the
  // batches the client wants (StreamRequest::demand).
  static Result<Opened> open(std::uint64_t id, const StreamPlan& plan, std::string_view state, bool demand,
                             std::shared_ptr<WorkerPool> pool, Admission::Ticket ticket,
                             nlohmann::json about);
  ~ServedStream();
  ServedStream(const ServedStream&) = delete;
  ServedStream& operator=(const ServedStream&) = delete;

  // The seek request: the loader goes to `epoch`, `position` (as load_state would), and
  // a new pass id makes the client drop what the ring still holds. The reply's body. On
  // demand: the epoch starts on demand, with nothing wanted.
  Result<nlohmann::json> seek(const nlohmann::json& body);
  // The want message of a stream on demand: {"generation", "batches"}; a want of an older
  // generation (it crossed a seek) is ignored. InvalidArgument for a malformed one.
  Status want(const nlohmann::json& body);
  // Whether produce() has somewhere to put a delivery: a slot the client may take, room
  // in the ring, and no lasting error sent in this pass.
  bool can_produce() const;
  // Pushes what the loader's next() gives — a batch, the end of the pass or an error —
  // into the deliveries ring and wakes the client; nothing when interrupt() cut it short.
  void produce();
  // Releases the batches the client gave back. Bounded: a client that scribbles over the
  // ring's indices cannot keep the session here.
  void drain_returns();
  // Readable when the client pushed returns.
  int returned_fd() const { return channel_.returned_fd(); }
  // The stream's figures, for forkfeed-ctl.
  nlohmann::json stats() const;
  // Cuts short produce()'s wait for the next batch (Loader::interrupt). Any thread.
  void interrupt() { loader_->interrupt(); }
  // The worker time spent on the stream so far (as stats()' worker_ns). Any thread.
  std::uint64_t worker_ns() const;

 private:
  ServedStream(std::uint64_t id, std::unique_ptr<Loader> loader, ConsumerChannel channel, std::uint32_t slots,
               bool demand, Admission::Ticket ticket, nlohmann::json about);
  // What produce() pushes: the loader's next batch, or its next wanted one.
  DeliveryRecord next_delivery();
  DeliveryRecord next_wanted();
  // A batch lent to the client, or the record of an error.
  DeliveryRecord lend(Batch batch);
  DeliveryRecord error_record(const Status& s, std::uint64_t index);

  const std::uint64_t id_;
  Admission::Ticket ticket_;  // given back last
  std::unique_ptr<Loader> loader_;
  ConsumerChannel channel_;
  Loader::SharedMemory memory_;
  LentBatches lent_;  // at the client or in its deliveries ring; released before the loader goes
  const bool demand_;
  std::uint64_t generation_ = 1;  // StreamOpened::generation
  bool fatal_sent_ = false;       // the loader's lasting error went out for this generation
  std::uint64_t bad_returns_ = 0;
  nlohmann::json about_;
  std::chrono::steady_clock::time_point opened_;
  std::uint64_t delivered_batches_ = 0, delivered_samples_ = 0;
  // The loader's skipped_samples that records carried (DeliveryRecord::skipped), the
  // index's included: the next record carries what the loader skipped beyond.
  std::uint64_t skipped_counted_ = 0;
};

}  // namespace forkfeed
