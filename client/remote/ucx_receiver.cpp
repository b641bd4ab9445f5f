// UcxReceiver: the gateway's deliveries taken off a UCX worker into the receive arena.
#include "client/remote/ucx_receiver.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>

#include "client/remote/control_channel.h"
#include "remote/remote_wire.h"

namespace forkfeed {

// One rendezvous receive in flight, for on_received.
struct UcxReceiver::Receive {
  UcxReceiver* receiver;
  std::uint64_t sequence;
};

Status UcxReceiver::listen() {
  for (const auto& [id, handler] :
       {std::pair{kDeliveryMessage, &on_delivery}, {kWelcomeMessage, &on_welcome}}) {
    if (Status s = worker_->set_am_handler(id, handler, this); !s.ok()) return s;
  }
  return Status::Ok();
}

Status UcxReceiver::make_arena(std::uint32_t slots, std::uint64_t slot_bytes, int pin_device) {
  auto arena = ReceiveArena::create(context_, slots, slot_bytes, pin_device);
  if (!arena.ok()) return arena.status();
  arena_ = std::move(arena).value();
  return Status::Ok();
}

bool UcxReceiver::arm() { return worker_->api().ucp_worker_arm(worker_->get()) != UCS_ERR_BUSY; }

void UcxReceiver::give_credits(ControlChannel& control) {
  if (!arena_ || !state_.lost.ok()) return;
  control.send_credits(arena_->take_credits());
}

std::optional<LinkDelivery> UcxReceiver::pop() {
  auto head = arrivals_.find(next_sequence_);
  if (head == arrivals_.end() || !head->second.ready) return std::nullopt;
  const Arrival arrival = head->second;
  arrivals_.erase(head);
  next_sequence_ += 1;
  LinkDelivery d{arrival.record, nullptr, 0};
  if (d.record.kind == DeliveryKind::kBatch) {
    d.record.handle = arrival.slot;
    // Read where the batches are (UCX wrote it through its own mapping of the slot).
    d.window = arena_->window();
    d.slot = std::uint64_t{arrival.slot} * arena_->slot_bytes();
    d.slot_bytes = arena_->slot_bytes();
    d.base = d.window->origin(d.slot) + d.slot;
    d.bytes = arrival.bytes;
  }
  return d;
}

bool UcxReceiver::next_ready() const {
  auto head = arrivals_.find(next_sequence_);
  return head != arrivals_.end() && head->second.ready;
}

std::uint32_t UcxReceiver::arrived() const {
  return static_cast<std::uint32_t>(
      std::count_if(arrivals_.begin(), arrivals_.end(), [](const auto& a) { return a.second.ready; }));
}

void UcxReceiver::finish() {
  // A worker whose gateway never ended its receives (gone without a word) is left, unused,
  // to the end of the process.
  const auto deadline = std::chrono::steady_clock::now() + kRemoteSilence;
  while (receiving_ > 0 && std::chrono::steady_clock::now() < deadline) {
    worker_->progress_and_arm();
    if (receiving_ == 0) break;
    pollfd p{worker_->event_fd(), POLLIN, 0};
    (void)::poll(&p, 1, 50);
  }
  if (receiving_ > 0) (void)worker_.release();
}

ucs_status_t UcxReceiver::on_welcome(void* arg, const void*, std::size_t, void*, std::size_t,
                                     const ucp_am_recv_param_t*) {
  auto* receiver = static_cast<UcxReceiver*>(arg);
  receiver->welcomed_ = true;
  receiver->state_.news += 1;
  return UCS_OK;
}

ucs_status_t UcxReceiver::on_delivery(void* arg, const void* header, std::size_t header_length, void* data,
                                      std::size_t length, const ucp_am_recv_param_t* param) {
  auto* receiver = static_cast<UcxReceiver*>(arg);
  receiver->state_.heard += 1;
  return receiver->accept_delivery(header, header_length, data, length, param);
}

ucs_status_t UcxReceiver::accept_delivery(const void* header, std::size_t header_length, void* data,
                                          std::size_t length, const ucp_am_recv_param_t* param) {
  const bool rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  const auto wire = read_delivery(header, header_length);
  const auto kind = wire ? static_cast<DeliveryKind>(wire->kind) : DeliveryKind{};
  if (!wire || wire->sequence < next_sequence_ || arrivals_.contains(wire->sequence) ||
      (kind != DeliveryKind::kBatch && kind != DeliveryKind::kEndOfPass && kind != DeliveryKind::kError &&
       kind != DeliveryKind::kEmpty) ||
      (kind != DeliveryKind::kBatch && rendezvous)) {
    (void)state_.lose("it sent a malformed delivery");
    return UCS_OK;  // a rendezvous not received is dropped by UCX
  }
  Arrival& arrival = arrivals_[wire->sequence];
  if (kind != DeliveryKind::kBatch) {
    arrival.record = from_wire(*wire, std::string_view(static_cast<const char*>(data), length));
    arrival.ready = true;
    state_.news += 1;
    return UCS_OK;
  }
  arrival.record = from_wire(*wire, {});
  const std::optional<std::uint32_t> slot = arena_ ? arena_->take() : std::nullopt;
  if (!slot || length > arena_->slot_bytes()) {
    arrivals_.erase(wire->sequence);
    (void)state_.lose(slot ? "it sent a batch larger than a receive slot"
                           : "it sent a batch beyond its credits");
    if (slot) arena_->give_back(*slot, false);
    return UCS_OK;
  }
  arrival.slot = *slot;
  arrival.bytes = length;
  if (!rendezvous) {  // small enough to come eagerly
    std::memcpy(arena_->slot(*slot), data, length);
    arrival.ready = true;
    state_.news += 1;
    return UCS_OK;
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  p.cb.recv_am = on_received;
  auto* receive = new Receive{this, wire->sequence};
  p.user_data = receive;
  p.memh = arena_->memh();
  ucs_status_ptr_t request =
      worker_->api().ucp_am_recv_data_nbx(worker_->get(), data, arena_->slot(*slot), length, &p);
  if (request == nullptr) {
    delete receive;
    arrival.ready = true;
    state_.news += 1;
  } else if (!UCS_PTR_IS_ERR(request)) {
    receiving_ += 1;
  } else {
    delete receive;
    (void)state_.lose("receiving a batch failed: " + worker_->api().error(UCS_PTR_STATUS(request)));
  }
  return UCS_INPROGRESS;
}

void UcxReceiver::on_received(void* request, ucs_status_t status, std::size_t, void* user_data) {
  std::unique_ptr<Receive> receive(static_cast<Receive*>(user_data));
  UcxReceiver* receiver = receive->receiver;
  receiver->receiving_ -= 1;
  receiver->worker_->api().ucp_request_free(request);
  auto it = receiver->arrivals_.find(receive->sequence);
  if (status != UCS_OK) {
    (void)receiver->state_.lose("receiving a batch failed: " + receiver->worker_->api().error(status));
  } else if (it != receiver->arrivals_.end()) {
    it->second.ready = true;
    receiver->state_.news += 1;
  }
}

}  // namespace forkfeed
