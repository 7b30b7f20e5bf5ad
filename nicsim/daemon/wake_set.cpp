#include "daemon/wake_set.h"

#include <boost/asio/steady_timer.hpp>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/epoll.h>

namespace nicsim {
namespace {

// Asio keeps its epoll descriptor to itself, and this process has no other: it is the one
// descriptor of the process that is an epoll instance (read before this set makes its own).
int asio_epoll_fd(boost::asio::io_context& io) {
    boost::asio::steady_timer reactor_user(io); // the reactor exists from here on
    DIR* dir = ::opendir("/proc/self/fd");
    if (!dir) throw std::runtime_error(std::string("/proc/self/fd: ") + std::strerror(errno));
    int found = -1, count = 0;
    while (dirent* e = ::readdir(dir)) {
        char target[64];
        const std::string path = std::string("/proc/self/fd/") + e->d_name;
        const ssize_t n = ::readlink(path.c_str(), target, sizeof target);
        if (n > 0 && std::string_view(target, n) == "anon_inode:[eventpoll]") {
            found = std::stoi(e->d_name);
            ++count;
        }
    }
    ::closedir(dir);
    if (count != 1)
        throw std::runtime_error("cannot tell the event loop's epoll descriptor: " +
                                 std::to_string(count) + " epoll descriptors open");
    return found;
}

} // namespace

WakeSet::WakeSet(boost::asio::io_context& io) {
    const int asio_fd = asio_epoll_fd(io);
    epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
    if (!watch(asio_fd, kAsio, false))
        throw std::runtime_error(std::string("cannot watch the event loop's epoll descriptor "
                                             "(epoll_ctl): ") +
                                 std::strerror(errno));
}

bool WakeSet::watch(int fd, Source source, bool edge) {
    epoll_event ev{};
    ev.events = EPOLLIN | (edge ? EPOLLET : 0u);
    ev.data.u32 = source;
    return ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) == 0;
}

void WakeSet::unwatch(int fd) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

unsigned WakeSet::wait(int timeout_ms) {
    epoll_event events[8];
    const int n = ::epoll_wait(epoll_.get(), events, 8, timeout_ms);
    unsigned ready = 0;
    for (int i = 0; i < n; ++i)
        ready |= events[i].data.u32;
    return ready;
}

} // namespace nicsim
