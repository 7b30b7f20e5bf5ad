#include "roce_port.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <sys/socket.h>

namespace nicsim {

UniqueFd bind_roce_port(in_addr address, uint16_t port) {
    UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) throw std::runtime_error(std::string("udp socket: ") + std::strerror(errno));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr = address;
    sa.sin_port = htons(port);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &address, ip, sizeof ip);
        throw std::runtime_error(std::string("cannot bind UDP ") + ip + ":" + std::to_string(port) +
                                 ": " + std::strerror(errno));
    }
    return fd;
}

} // namespace nicsim
