// UcxReceiver: a RemoteLink's UCX side. Its worker takes the gateway's welcome and its
// deliveries as active messages, a batch by rendezvous straight into a free slot of the
// link's receive arena, and puts them back in the order of their sequence numbers; every
// slot freed is a credit it gives over the control channel. The worker is called (and
// calls back) only under the link's mutex: by the link's thread, which progresses it
// whenever it has work, and by the link's calls.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "client/remote/link_state.h"
#include "client/remote/receive_arena.h"
#include "client/stream_link.h"
#include "protocol/consumer_channel.h"
#include "remote/ucx.h"

namespace forkfeed {

class ControlChannel;

class UcxReceiver {
 public:
  // `worker`: of `context`, made for several threads taking turns (SERIALIZED). `state`
  // outlives the receiver.
  UcxReceiver(LinkState& state, std::shared_ptr<UcxContext> context, std::unique_ptr<UcxWorker> worker)
      : state_(state), context_(std::move(context)), worker_(std::move(worker)) {}
  UcxReceiver(const UcxReceiver&) = delete;
  UcxReceiver& operator=(const UcxReceiver&) = delete;

  // Takes the gateway's messages from here on (before its hello goes out).
  Status listen();
  // The tcp segment the worker receives in, when its context knows it (for the hello).
  std::optional<std::uint64_t> tcp_segment() const { return context_->tcp_segment(); }
  // The receive arena, once the stream is open: `slots` of `slot_bytes`, page-locked for
  // `pin_device` when >= 0. Its slots are owed to the gateway as credits.
  Status make_arena(std::uint32_t slots, std::uint64_t slot_bytes, int pin_device);
  // Null until make_arena(); shared with the leases of the batches handed out.
  const std::shared_ptr<ReceiveArena>& arena() const { return arena_; }

  // The calls below are made under the link's mutex (LinkState::mu).
  // Runs UCX's callbacks until nothing is left to do.
  void progress() { worker_->progress(); }
  // Arms the worker's event_fd(); false when more came meanwhile (progress again first).
  bool arm();
  // Sends the credits of the slots freed, unless the link is lost.
  void give_credits(ControlChannel& control);
  // The next delivery in order, if its bytes are all in.
  std::optional<LinkDelivery> pop();
  bool next_ready() const;
  // Deliveries whose bytes are all in, not yet popped.
  std::uint32_t arrived() const;
  // Rendezvous receives in flight.
  std::uint32_t receiving() const { return receiving_; }
  // The gateway's first message over UCX came: the two workers' handshake is over.
  bool welcomed() const { return welcomed_; }

  // Readable when the worker has something to progress, once armed.
  int event_fd() const { return worker_->event_fd(); }
  // Readable when slots were given back (credits to send); -1 before the arena.
  int returned_fd() const { return arena_ ? arena_->returned_fd() : -1; }
  // With the link's thread stopped and the control connection closed: waits (a while) for
  // the receives in flight to end, since UCX must not destroy a worker with one pending.
  void finish();

 private:
  // A delivery on its way, by sequence number: ready once its bytes are in its slot.
  struct Arrival {
    DeliveryRecord record{};
    std::uint32_t slot = 0;
    std::uint64_t bytes = 0;  // kBatch: what came into the slot (nothing beyond it is read)
    bool ready = false;
  };
  struct Receive;  // one rendezvous receive in flight

  static ucs_status_t on_delivery(void* arg, const void* header, std::size_t header_length, void* data,
                                  std::size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t on_welcome(void* arg, const void* header, std::size_t header_length, void* data,
                                 std::size_t length, const ucp_am_recv_param_t* param);
  static void on_received(void* request, ucs_status_t status, std::size_t length, void* user_data);
  ucs_status_t accept_delivery(const void* header, std::size_t header_length, void* data, std::size_t length,
                               const ucp_am_recv_param_t* param);

  LinkState& state_;
  std::shared_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  std::shared_ptr<ReceiveArena> arena_;  // shared with the leases of batches handed out
  std::map<std::uint64_t, Arrival> arrivals_;
  std::uint64_t next_sequence_ = 0;
  std::uint32_t receiving_ = 0;  // rendezvous receives in flight
  bool welcomed_ = false;        // the gateway's first message over UCX came
};

}  // namespace forkfeed
