// ClientStream::attach: the one way into a stream forkfeedd opened, for a Client and
// forkfeed-gateway alike.
#include "client/client_stream.h"

#include <sys/stat.h>

#include <cerrno>
#include <string>

namespace forkfeed {

Result<std::shared_ptr<ClientStream>> ClientStream::attach(std::vector<UniqueFd> fds) {
  if (fds.size() != 4) {
    return Status::Internal("forkfeedd sent " + std::to_string(fds.size()) +
                            " fds with a stream instead of 4; is it another forkfeed version?");
  }
  struct stat st {};
  if (::fstat(fds[0].get(), &st) != 0) return Status::FromErrno("fstat of the stream's arena", errno);
  auto arena = SlotWindow::map(fds[0].get(), static_cast<std::uint64_t>(st.st_size), false);
  if (!arena.ok()) return arena.status();
  auto channel = ConsumerChannel::attach(std::move(fds[1]), std::move(fds[2]), std::move(fds[3]));
  if (!channel.ok()) return channel.status();
  return std::make_shared<ClientStream>(std::move(arena).value(), std::move(channel).value());
}

}  // namespace forkfeed
