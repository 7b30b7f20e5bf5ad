#include "server.h"

#include "status_json.h"

#include "emu/private_files.h"

#include <boost/asio/error.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <utility>

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

// Removes the socket a daemon that died left at `name` in the checked directory `dir`; anything
// else there is not ours to remove.
void clear_stale_socket(int dir, const std::string& name, const std::string& path) {
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return; // nothing there
    if (!S_ISSOCK(st.st_mode))
        throw std::runtime_error(path + " exists and is not a socket; not replacing it");
    if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT)
        throw std::runtime_error("cannot remove the stale socket " + path + ": " +
                                 std::strerror(errno));
}

int listen_on(const std::string& path, mode_t mode) {
    sockaddr_un addr = unix_address(path);
    auto [dir_path, name] = emu::split_path(path);
    emu::Opened dir = emu::open_private_dir(dir_path);
    if (!dir.fd) throw std::runtime_error("refusing the control socket's directory: " + dir.error);
    if (someone_listens(addr)) throw std::runtime_error("another nicsimd serves " + path);
    clear_stale_socket(dir.fd.get(), name, path);
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    // bind() makes the socket file 0777 & ~umask, so this umask gives exactly `mode`. The
    // daemon is one thread: nothing else creates files meanwhile.
    const mode_t old_umask = ::umask(0777 & ~mode);
    int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::umask(old_umask);
    if (rc < 0 || ::listen(fd, 64) < 0) {
        int err = errno;
        ::close(fd);
        throw std::runtime_error("cannot listen on " + path + ": " + std::strerror(err));
    }
    return fd;
}

} // namespace

ControlServer::ControlServer(boost::asio::io_context& io, Nic& nic, spdlog::logger& log,
                             std::string path, mode_t mode, PeerUidPolicy policy)
    : io_(io), nic_(nic), log_(log), path_(std::move(path)), policy_(std::move(policy)),
      listener_(io, listen_on(path_, mode)) {
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
                             if (fd >= 0 && !peer_allowed(fd)) {
                                 ::close(fd);
                             } else if (fd >= 0) {
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

bool ControlServer::peer_allowed(int fd) {
    ucred peer{};
    socklen_t len = sizeof peer;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) {
        log_.warn("control connection refused: cannot read its credentials (SO_PEERCRED): {}",
                  std::strerror(errno));
        return false;
    }
    if (policy_.allows(peer.uid)) return true;
    std::string suffix;
    if (refusals_.allow("refused", suffix))
        log_.warn("control connection from uid {} (pid {}) refused: only {} may use this NIC "
                  "(rdmaemu up --allow-uid adds uids){}",
                  peer.uid, peer.pid, policy_.describe(), suffix);
    return false;
}

std::string ControlServer::status_json() const {
    std::vector<const Session*> live;
    for (const auto& [id, s] : sessions_)
        live.push_back(s.get());
    return host_status_json(nic_, live);
}

} // namespace nicsim
