#include "server.h"

#include "status_json.h"

#include <boost/asio/error.hpp>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace nicsim {

namespace {

sockaddr_un unix_address(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path)
        throw std::runtime_error("socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return addr;
}

// True when a live daemon accepts connections on `addr`.
bool someone_listens(const sockaddr_un& addr) {
    int probe = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    bool live = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    ::close(probe);
    return live;
}

int listen_on(const std::string& path) {
    sockaddr_un addr = unix_address(path);
    if (someone_listens(addr)) throw std::runtime_error("another nicsimd serves " + path);
    ::unlink(path.c_str()); // a stale socket from a daemon that died
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 || ::listen(fd, 64) < 0) {
        int err = errno;
        ::close(fd);
        throw std::runtime_error("cannot listen on " + path + ": " + std::strerror(err));
    }
    return fd;
}

} // namespace

ControlServer::ControlServer(boost::asio::io_context& io, Nic& nic, spdlog::logger& log,
                             std::string path)
    : io_(io), nic_(nic), log_(log), path_(std::move(path)), listener_(io, listen_on(path_)) {
    accept_next();
}

ControlServer::~ControlServer() {
    shutdown();
    ::unlink(path_.c_str());
}

void ControlServer::shutdown() {
    boost::system::error_code ignored;
    listener_.close(ignored);
    while (!sessions_.empty())
        sessions_.begin()->second->end("daemon shutting down");
}

void ControlServer::accept_next() {
    listener_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                         [this](const boost::system::error_code& ec) {
                             if (ec == boost::asio::error::operation_aborted) return;
                             int fd = ::accept4(listener_.native_handle(), nullptr, nullptr,
                                                SOCK_NONBLOCK | SOCK_CLOEXEC);
                             if (fd >= 0) {
                                 auto s = std::make_shared<Session>(
                                     io_, nic_, log_, fd, [this] { return status_json(); },
                                     [this](Session& done) { sessions_.erase(done.id()); });
                                 sessions_.emplace(s->id(), s);
                                 s->start();
                             } else if (errno != EAGAIN && errno != EINTR) {
                                 log_.error("accept failed: {}", std::strerror(errno));
                             }
                             accept_next();
                         });
}

std::string ControlServer::status_json() const {
    std::vector<const Session*> live;
    for (const auto& [id, s] : sessions_)
        live.push_back(s.get());
    return host_status_json(nic_, live);
}

} // namespace nicsim
