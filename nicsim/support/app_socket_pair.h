// The socket pair behind each descriptor the NIC hands an app (a CM event channel, a completion
// channel, the async event fd): the NIC's end non-blocking, since a stalled app must never
// block the NIC.
#pragma once

#include "support/unique_fd.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>

namespace nicsim {

struct AppSocketPair {
    UniqueFd nic_end;
    UniqueFd app_end;
};

// 0 with both ends, or the errno (and neither).
inline int make_app_socket_pair(AppSocketPair& out) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0) return errno;
    out.nic_end.reset(fds[0]);
    out.app_end.reset(fds[1]);
    const int flags = ::fcntl(fds[0], F_GETFL);
    if (flags < 0 || ::fcntl(fds[0], F_SETFL, flags | O_NONBLOCK) < 0) {
        const int err = errno;
        out = {};
        return err;
    }
    return 0;
}

} // namespace nicsim
