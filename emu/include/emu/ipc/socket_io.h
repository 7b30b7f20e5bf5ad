// Message-at-a-time I/O on SOCK_SEQPACKET unix sockets, with passed descriptors.
#pragma once

#include <cstddef>
#include <sys/types.h>

namespace emu::ipc {

inline constexpr size_t kMaxPassedFds = 4;

// Descriptors that travel with one message.
struct PassedFds {
    int fd[kMaxPassedFds] = {-1, -1, -1, -1};
    size_t count = 0;
    // Closes every descriptor still held.
    void close_all();
};

// Sends one message with the given descriptors. Returns 0 or a positive errno.
int send_message(int sock, const void* buf, size_t len, const int* fds = nullptr, size_t nfds = 0);

// Receives one message into buf. Returns its length (0 at end of stream) or -errno; a message
// longer than `cap` returns -EMSGSIZE. Descriptors that came with it land in *fds
// (close-on-exec); when `fds` is null, or beyond kMaxPassedFds, they are closed. On a socket
// with SO_PASSCRED, *sender (when given) becomes the sending process, as the kernel vouches.
ssize_t recv_message(int sock, void* buf, size_t cap, PassedFds* fds, pid_t* sender = nullptr);

} // namespace emu::ipc
