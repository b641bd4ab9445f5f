// LocalLink: a stream on forkfeedd on this host — requests over its Unix socket, batches
// read in place from the daemon's arena, deliveries and returns through the shared
// consumer channel (ClientStream).
#pragma once

#include <memory>

#include "client/client_stream.h"
#include "client/daemon_connection.h"
#include "client/stream_link.h"

namespace forkfeed {

class LocalLink final : public StreamLink {
 public:
  // Opens a stream with `request` (an open_stream body) on the daemon at the other end of
  // `connection`; the reply's body in `opened`.
  static Result<std::unique_ptr<LocalLink>> open(DaemonConnection connection, const nlohmann::json& request,
                                                 nlohmann::json& opened);

  Result<nlohmann::json> request(MessageType type, const nlohmann::json& body) override;
  std::optional<LinkDelivery> pop() override;
  Result<bool> wait(int interrupt_fd) override;
  Status check() override { return connection_.check(); }
  void drop(const LinkDelivery& d) override { stream_->give_back(d.record.handle, d.record.tag, false); }
  std::unique_ptr<detail::SlotLease> lend(const LinkDelivery& d) override;
  std::uint32_t held() const override { return stream_->held(); }
  std::uint32_t slots() const override { return slots_; }
  bool pinned() const override { return false; }  // the daemon's memory: never the trainer's to pin

 private:
  LocalLink(DaemonConnection connection, std::shared_ptr<ClientStream> stream, std::uint32_t slots,
            std::uint64_t slot_bytes)
      : connection_(std::move(connection)),
        stream_(std::move(stream)),
        slots_(slots),
        slot_bytes_(slot_bytes) {}
  DaemonConnection connection_;
  std::shared_ptr<ClientStream> stream_;
  std::uint32_t slots_;
  std::uint64_t slot_bytes_;  // each slot's, as the reply said
};

}  // namespace forkfeed
