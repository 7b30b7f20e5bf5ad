#include "roce_port.h"

#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <stdexcept>
#include <string>
#include <sys/socket.h>

namespace nicsim {

UniqueFd bind_roce_port(const emu::wire::IpAddress& address, uint16_t port) {
    const int family = address.family();
    UniqueFd fd(::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) throw std::runtime_error(std::string("udp socket: ") + std::strerror(errno));
    if (family == AF_INET6) {
        int on = 1;
        ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    }
    sockaddr_storage sa;
    const socklen_t len = emu::wire::to_sockaddr({address, port}, sa);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), len) < 0) {
        const std::string where = family == AF_INET6 ? "[" + address.text() + "]" : address.text();
        throw std::runtime_error("cannot bind UDP " + where + ":" + std::to_string(port) + ": " +
                                 std::strerror(errno));
    }
    return fd;
}

} // namespace nicsim
