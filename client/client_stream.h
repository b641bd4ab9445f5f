// ClientStream: a stream forkfeedd opened, as its client holds it — the read-only view
// of the daemon's arena (a SlotWindow: a Client copies aside a batch it holds while it
// holds every slot) and the consumer channel. A Client shares it with the Batches it
// handed out, so a Batch stays readable, and can still give its slot back, after its
// Client is gone; forkfeed-gateway shares it with its batch sends in flight (and never
// copies one aside: its sends read the arena where it is first mapped).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/owner_process.h"
#include "base/unique_fd.h"
#include "loader/slot_pool.h"
#include "protocol/consumer_channel.h"
#include "transport/slot_window.h"

namespace forkfeed {

class ClientStream {
 public:
  // Attaches to the stream forkfeedd opened, from the four fds of its open_stream reply
  // (the arena, then the consumer channel's memory and its two eventfds): maps the arena
  // read-only and attaches the channel. For a Client and for forkfeed-gateway alike.
  static Result<std::shared_ptr<ClientStream>> attach(std::vector<UniqueFd> fds);
  ClientStream(std::shared_ptr<SlotWindow> arena, ConsumerChannel channel)
      : arena_(std::move(arena)), channel_(std::move(channel)) {}

  const SlotWindow& arena() const { return *arena_; }
  const std::shared_ptr<SlotWindow>& window() const { return arena_; }
  const ConsumerChannel& channel() const { return channel_; }
  // Batches handed out and not yet given back.
  std::uint32_t held() const { return held_.load(std::memory_order_acquire); }
  void took() { held_.fetch_add(1, std::memory_order_acq_rel); }

  // Pushes a return and wakes the daemon. Any thread: Batches are released anywhere
  // (and the gateway's sends complete in UCX's callbacks).
  // Nothing in the child of a fork(): the ring is the parent's, and so is the slot.
  void give_back(std::uint32_t handle, std::uint64_t tag, bool was_held) {
    if (!owner_.here()) return;
    std::lock_guard lock(mu_);
    // The ring holds every slot of the stream, so it is full only if the daemon broke
    // the protocol; the stream is lost then anyway.
    (void)channel_.block().returns.try_push(SlotReturn{handle, 0, tag});
    channel_.ring_returned();
    if (was_held) held_.fetch_sub(1, std::memory_order_acq_rel);
  }

 private:
  std::shared_ptr<SlotWindow> arena_;
  ConsumerChannel channel_;
  std::mutex mu_;  // the returns ring has one producer: whichever thread holds this
  std::atomic<std::uint32_t> held_{0};
  OwnerProcess owner_;
};

// The lease of a Batch read through a Client: gives the slot back to the daemon.
class ReturnLease final : public detail::SlotLease {
 public:
  ReturnLease(std::shared_ptr<ClientStream> stream, std::uint32_t handle, std::uint64_t tag)
      : stream_(std::move(stream)), handle_(handle), tag_(tag) {}
  ~ReturnLease() override { stream_->give_back(handle_, tag_, true); }

 private:
  std::shared_ptr<ClientStream> stream_;
  std::uint32_t handle_;
  std::uint64_t tag_;
};

}  // namespace forkfeed
