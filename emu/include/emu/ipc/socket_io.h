// Message-at-a-time I/O on SOCK_SEQPACKET unix sockets, with one optional passed descriptor.
#pragma once

#include <cstddef>
#include <sys/types.h>

namespace emu::ipc {

// Sends one message, and `pass_fd` with it when >= 0. Returns 0 or a positive errno.
int send_message(int sock, const void* buf, size_t len, int pass_fd = -1);

// Receives one message into buf. Returns its length (0 at end of stream) or -errno; a message
// longer than `cap` returns -EMSGSIZE. A descriptor that came with it lands in *received_fd
// (close-on-exec), else *received_fd is -1; extra descriptors are closed.
ssize_t recv_message(int sock, void* buf, size_t cap, int* received_fd);

} // namespace emu::ipc
