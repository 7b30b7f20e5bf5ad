#include "emu/ipc/socket_io.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

namespace emu::ipc {

void PassedFds::close_all() {
    for (size_t i = 0; i < count; ++i)
        if (fd[i] >= 0) ::close(fd[i]);
    count = 0;
}

int send_message(int sock, const void* buf, size_t len, const int* fds, size_t nfds) {
    if (nfds > kMaxPassedFds) return EINVAL;
    iovec iov{const_cast<void*>(buf), len};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
    if (nfds) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    for (;;) {
        ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
        if (n >= 0) return static_cast<size_t>(n) == len ? 0 : EMSGSIZE;
        if (errno != EINTR) return errno;
    }
}

ssize_t recv_message(int sock, void* buf, size_t cap, PassedFds* fds, pid_t* sender) {
    PassedFds local;
    PassedFds& out = fds ? *fds : local;
    out = PassedFds{};
    iovec iov{buf, cap};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8) + CMSG_SPACE(sizeof(ucred))];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do {
        n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return -errno;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS && sender &&
            c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
            ucred cred;
            std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
            *sender = cred.pid;
            continue;
        }
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (out.count < kMaxPassedFds)
                out.fd[out.count++] = fd;
            else
                ::close(fd);
        }
    }
    if (!fds || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        out.close_all();
        if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return -EMSGSIZE;
    }
    return n;
}

} // namespace emu::ipc
