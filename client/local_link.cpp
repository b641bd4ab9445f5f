// LocalLink: forkfeedd's socket, and the stream it opened (ClientStream) read in place.
#include "client/local_link.h"

#include <poll.h>

#include <cerrno>

#include "protocol/stream_request.h"

namespace forkfeed {

Result<std::unique_ptr<LocalLink>> LocalLink::open(DaemonConnection connection, const nlohmann::json& request,
                                                   nlohmann::json& opened) {
  auto reply = connection.request(MessageType::kOpenStream, request);
  if (!reply.ok()) return reply.status();
  auto stream = ClientStream::attach(std::move(reply->fds));
  if (!stream.ok()) return stream.status();
  auto slots = get_uint(reply->body, "slots", kChannelCapacity);
  if (!slots.ok()) return Status::Internal("forkfeedd sent a malformed stream: " + slots.status().message());
  // An older forkfeedd does not say (0): its batches are never copied aside here.
  auto slot_bytes = reply->body.contains("slot_bytes")
                        ? get_uint(reply->body, "slot_bytes", (*stream)->arena().size())
                        : Result<std::uint64_t>(std::uint64_t{0});
  if (!slot_bytes.ok())
    return Status::Internal("forkfeedd sent a malformed stream: " + slot_bytes.status().message());
  opened = std::move(reply->body);
  return std::unique_ptr<LocalLink>(new LocalLink(std::move(connection), std::move(stream).value(),
                                                  static_cast<std::uint32_t>(*slots), *slot_bytes));
}

Result<nlohmann::json> LocalLink::request(MessageType type, const nlohmann::json& body) {
  auto reply = connection_.request(type, body);
  if (!reply.ok()) return reply.status();
  return std::move(reply->body);
}

std::optional<LinkDelivery> LocalLink::pop() {
  auto d = stream_->channel().block().deliveries.try_pop();
  if (!d) return std::nullopt;
  const SlotWindow& arena = stream_->arena();
  return LinkDelivery{
      *d, arena.origin(d->slot_offset), arena.size(), stream_->window(), d->slot_offset, slot_bytes_};
}

Result<bool> LocalLink::wait(int interrupt_fd) {
  const int delivered = stream_->channel().delivered_fd();
  pollfd p[3] = {{delivered, POLLIN, 0}, {connection_.fd(), POLLIN, 0}, {interrupt_fd, POLLIN, 0}};
  while (::poll(p, 3, -1) < 0) {
    if (errno != EINTR) return Status::FromErrno("poll for forkfeedd deliveries", errno);
  }
  if (p[1].revents != 0) {
    if (Status s = connection_.check(); !s.ok()) return s;
  }
  if (p[2].revents != 0) return false;
  ConsumerChannel::clear(delivered);
  return true;
}

std::unique_ptr<detail::SlotLease> LocalLink::lend(const LinkDelivery& d) {
  stream_->took();
  return std::make_unique<ReturnLease>(stream_, d.record.handle, d.record.tag);
}

}  // namespace forkfeed
