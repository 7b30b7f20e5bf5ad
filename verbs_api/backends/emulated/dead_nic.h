// When the NIC is gone: its daemon died (kill -9, a crash) or it ended the session. The library
// sees the session's socket close. From then on nothing produces into the session's rings: a
// dying process's descriptors are closed only after its memory is torn down, and the daemon
// closes a session's socket only after it freed (and unmapped) the session's objects. So the
// library completes what is outstanding itself, as a disassociated device's do: setup verbs fail
// with EIO (the socket is closed), the async fd reports IBV_EVENT_DEVICE_FATAL, and every WR in
// an SQ or RQ completes with IBV_WC_WR_FLUSH_ERR.
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>

namespace verbs {

struct EmuSession;

// Whether the NIC closed the session's control socket (one poll(2) that does not wait).
bool nic_gone(const EmuSession& s);

// For polls that keep finding their CQ empty: every 100 ms at most, looks whether the NIC is
// gone, and once it is, flushes what is outstanding.
void watch_nic(EmuSession& s);

// The NIC is gone: marks the session (once, with a line in the verbs log) and flushes.
void nic_died(EmuSession& s);

// For a destroy verb whose request the NIC answered with `err`, as rdma-core's
// verbs_is_destroy_err: EIO from a device whose NIC is gone counts as success when
// RDMAV_ALLOW_DISASSOC_DESTROY is set (the NIC freed the object with the session), so the app's
// structs are freed instead of leaked. True then, with `err` 0: the caller frees without waiting
// for the object's events to be acknowledged, as rdma-core does.
bool destroyed_with_nic(ibv_context* ctx, int& err);

// What a destroy verb returns when the NIC refused it: the errno, left in errno too, as
// rdma-core's destroy verbs leave the failed command's (the kernel's ENOENT for a handle that
// names nothing, EBUSY for an object still in use).
inline int destroy_refused(int err) {
    errno = err;
    return err;
}

// Completes every WR still in the session's SQs and RQs with IBV_WC_WR_FLUSH_ERR into its CQ, as
// far as the CQ has room (the rest on a later call: after posts and empty polls). SRQ receives
// stay, as when a QP goes to ERR; a receive the NIC had begun to fill is no longer in the RQ and
// gets no completion.
void flush_outstanding(EmuSession& s);

} // namespace verbs
