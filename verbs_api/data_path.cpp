// The data-path ops. Until the NIC's transport exists no work request can be executed:
// posting fails with EOPNOTSUPP (said once on stderr) and CQs stay empty.
#include "emu_objects.h"
#include "ops.h"

#include <cerrno>
#include <cstdio>
#include <mutex>

namespace verbs {
namespace {

int not_yet(const char* verb) {
    static std::once_flag once;
    std::call_once(once, [verb] {
        std::fprintf(stderr, "rdmaemu: %s: the emulated data path is not implemented yet\n",
                     verb);
    });
    return EOPNOTSUPP;
}

} // namespace

int poll_cq(ibv_cq*, int, ibv_wc*) { return 0; }
int req_notify_cq(ibv_cq*, int) { return 0; }

int post_send(ibv_qp*, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
    *bad_wr = wr;
    return not_yet("ibv_post_send");
}

int post_recv(ibv_qp*, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    *bad_wr = wr;
    return not_yet("ibv_post_recv");
}

int post_srq_recv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    *bad_wr = wr;
    return not_yet("ibv_post_srq_recv");
}

} // namespace verbs
