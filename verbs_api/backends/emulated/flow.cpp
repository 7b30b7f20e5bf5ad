// Flow steering (ibv_create_flow, ibv_destroy_flow), reached through the verbs_context ops:
// the attr and its specs go to the NIC, which checks them and steers matching frames to the
// raw packet QP.
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/ops.h"

#include <cerrno>
#include <cstring>
#include <new>

namespace verbs {
namespace ipc = emu::ipc;

namespace {

// The bytes of the specs that follow the attr: each starts with its type (4 bytes) and size
// (2 bytes). 0, or EINVAL when a size is too small to hold that header or they do not fit.
int spec_bytes(const ibv_flow_attr& attr, size_t& out) {
    const auto* p = reinterpret_cast<const uint8_t*>(&attr + 1);
    size_t total = 0;
    for (unsigned i = 0; i < attr.num_of_specs; ++i) {
        uint16_t size;
        std::memcpy(&size, p + total + 4, sizeof size);
        if (size < 8 || total + size > ipc::kMaxFlowSpecBytes) return EINVAL;
        total += size;
    }
    out = total;
    return 0;
}

} // namespace

ibv_flow* create_flow(ibv_qp* qp, ibv_flow_attr* attr) {
    if (!qp || !attr) return fail<ibv_flow>(EINVAL);
    ipc::CreateFlowReq req{};
    size_t bytes = 0;
    if (int err = spec_bytes(*attr, bytes)) return fail<ibv_flow>(err);
    req.qp = qp->handle;
    req.comp_mask = attr->comp_mask;
    req.type = static_cast<uint32_t>(attr->type);
    req.flags = attr->flags;
    req.priority = attr->priority;
    req.num_of_specs = attr->num_of_specs;
    req.port = attr->port;
    req.spec_bytes = static_cast<uint32_t>(bytes);
    std::memcpy(req.specs, attr + 1, bytes);
    ipc::HandleReply r{};
    if (int err = control(qp->context).call<ipc::Op::CreateFlow>(req, r))
        return fail<ibv_flow>(err);
    auto* flow = new (std::nothrow) ibv_flow{};
    if (!flow) {
        control(qp->context).call<ipc::Op::DestroyFlow>({r.handle, 0});
        return fail<ibv_flow>(ENOMEM);
    }
    flow->context = qp->context;
    flow->handle = r.handle;
    return flow;
}

int destroy_flow(ibv_flow* flow) {
    if (int err = control(flow->context).call<ipc::Op::DestroyFlow>({flow->handle, 0});
        err && !destroyed_with_nic(flow->context, err))
        return destroy_refused(err);
    delete flow;
    return 0;
}

} // namespace verbs
