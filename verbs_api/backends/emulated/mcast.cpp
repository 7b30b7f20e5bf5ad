// Multicast groups for UD QPs: the NIC keeps the membership and checks the arguments as the
// kernel does (EINVAL: not a UD QP or not a multicast GID; ENOMEM: a device limit).
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"

#include <cerrno>
#include <cstring>
#include <infiniband/verbs.h>

using namespace verbs;
namespace ipc = emu::ipc;

namespace {

template <ipc::Op op> int mcast_call(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
    if (!qp || !gid) return EINVAL;
    ipc::McastReq q{};
    q.qp = qp->handle;
    q.lid = lid;
    std::memcpy(q.gid, gid->raw, sizeof q.gid);
    return control(qp->context).call<op>(q);
}

} // namespace

int verbs::emulated::ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
    return mcast_call<ipc::Op::AttachMcast>(qp, gid, lid);
}
int verbs::emulated::ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
    return mcast_call<ipc::Op::DetachMcast>(qp, gid, lid);
}
