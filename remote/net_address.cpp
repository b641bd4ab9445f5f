// HOST:PORT through getaddrinfo.
#include "remote/net_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

#include "base/printable.h"

namespace forkfeed {

Result<sockaddr_storage> parse_net_address(std::string_view text, std::string_view what) {
  const auto bad = [&](std::string_view why) {
    std::string message(what);
    message.append(" '").append(printable(text)).append("': ").append(why);
    message.append("; write HOST:PORT, e.g. 10.0.0.7:13337 or [fd00::7]:13337");
    return Status::InvalidArgument(std::move(message));
  };
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("no host and port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) return bad("an IPv6 address must be in brackets");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 address must be in brackets");
  }
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return bad("the port must be a number from 0 to 65535");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string host_s(host);
  if (const int rc = ::getaddrinfo(host_s.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    std::string message(what);
    message.append(" '").append(printable(text)).append("': cannot resolve '").append(printable(host));
    message.append("': ").append(::gai_strerror(rc));
    return Status::NotFound(std::move(message));
  }
  sockaddr_storage address{};
  std::memcpy(&address, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  return address;
}

std::string describe(const sockaddr_storage& address) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
    return std::string(host).append(":").append(std::to_string(ntohs(in.sin_port)));
  }
  if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof host);
    return std::string("[").append(host).append("]:").append(std::to_string(ntohs(in6.sin6_port)));
  }
  return "an address of family " + std::to_string(address.ss_family);
}

}  // namespace forkfeed
