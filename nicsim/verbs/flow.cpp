// Flow steering (ibv_create_flow, ibv_destroy_flow): rules that send matching Ethernet frames
// to a raw packet QP. The checks follow the kernel's ib_uverbs_ex_create_flow.
#include "nic/device_limits.h"
#include "verbs.h"

#include <cerrno>

namespace nicsim {

int create_flow(VerbContext& c, const ipc::CreateFlowReq& q, ipc::HandleReply& r) {
    // The kernel's ex_create_flow: comp_mask, then CAP_NET_RAW, then the rule and the QP.
    if (q.comp_mask) return EINVAL;
    if (!c.net_raw) return EPERM;
    Qp* qp = c.objects.qps.get(q.qp);
    if (!qp) return EINVAL;
    if (qp->type == IBV_QPT_UD) return EOPNOTSUPP; // steering into UD QPs is IB-only
    if (qp->type != IBV_QPT_RAW_PACKET) return EINVAL;
    if (q.type != IBV_FLOW_ATTR_NORMAL) return EOPNOTSUPP; // default and sniffer rules
    constexpr uint32_t kKnownFlags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP | IBV_FLOW_ATTR_FLAGS_EGRESS;
    if (q.flags & ~kKnownFlags) return EINVAL;
    if (q.flags) return EOPNOTSUPP;
    if (q.port != 1) return EINVAL;
    if (q.num_of_specs > limits::kMaxFlowSpecs || q.spec_bytes > ipc::kMaxFlowSpecBytes)
        return EINVAL;
    emu::flow::Rule rule;
    if (int err = emu::flow::parse_specs(q.specs, q.spec_bytes, q.num_of_specs, rule)) {
        c.log.info("{} create flow on qp#{} rejected: {} specs, {} bytes ({})", c.prefix,
                   qp->handle, q.num_of_specs, q.spec_bytes,
                   err == EOPNOTSUPP ? "a spec type not supported" : "malformed");
        return err;
    }
    if (c.nic.flows().size() >= limits::kMaxFlows) return ENOMEM;
    auto flow = std::make_unique<Flow>();
    flow->qp = qp;
    flow->priority = q.priority;
    flow->rule = rule;
    Flow& made = c.objects.flows.add(std::move(flow));
    c.nic.add_flow(made);
    ++qp->flows;
    r.handle = made.handle;
    c.log.debug("{} flow#{} created: qp#{} priority {}, {} specs", c.prefix, made.handle,
                qp->handle, q.priority, q.num_of_specs);
    return 0;
}

void free_flow(Nic& nic, SessionObjects& objs, Flow& flow) {
    nic.remove_flow(flow);
    --flow.qp->flows;
    objs.flows.erase(flow.handle);
}

int destroy_flow(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    Flow* flow = c.objects.flows.get(q.handle);
    if (!flow) return no_object(c, "flow", q.handle);
    free_flow(c.nic, c.objects, *flow);
    c.log.debug("{} flow#{} destroyed", c.prefix, q.handle);
    return 0;
}

} // namespace nicsim
