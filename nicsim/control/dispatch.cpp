#include "dispatch.h"

#include "diag/report.h"
#include "session.h"
#include "verbs/verbs.h"

#include <spdlog/fmt/fmt.h>

#include <array>
#include <cstring>

namespace nicsim {
namespace {

using emu::ipc::Op;
using Handler = void (*)(Session&, const emu::ipc::Header&, const char*, pid_t);

// A refused verb: said in the log, kept in status, and handed to the app with the reply.
uint32_t explain_refusal(Session& s, Op op, int err, const VerbContext& ctx) {
    const char* name = strerrorname_np(err);
    std::string headline = fmt::format("{} refused ({})", emu::ipc::op_name(op), name ? name : "?");
    std::string why = ctx.reason.empty() ? "no reason recorded" : ctx.reason;
    return report(s.nic(), s.log(), &s.objects(), emu::ipc::ReasonKind::Refusal, ctx.reason_qpn,
                  headline, why);
}

template <Op op, auto Verb>
void run(Session& s, const emu::ipc::Header& h, const char* body, pid_t caller) {
    using Req = typename emu::ipc::Types<op>::Req;
    using Reply = typename emu::ipc::Types<op>::Reply;
    Req req{};
    if constexpr (emu::ipc::body_size<Req>() != 0) std::memcpy(&req, body, sizeof req);
    Reply reply{};
    VerbContext ctx{s.nic(), s.objects(), s.log(),     s.prefix(),
                    caller,  {},          s.net_raw(), s.take_request_fds()};
    int err = Verb(ctx, req, reply);
    uint32_t reason = 0;
    if (err) {
        ctx.pass_fds.clear();
        reason = explain_refusal(s, op, err, ctx);
    }
    s.send_reply(h, err, &reply, err ? 0 : emu::ipc::body_size<Reply>(), ctx.pass_fds, reason);
}

constexpr auto make_table() {
    std::array<Handler, static_cast<size_t>(Op::Count)> t{};
#define VERB(op, fn) t[static_cast<size_t>(Op::op)] = &run<Op::op, fn>
    VERB(QueryDevice, query_device);
    VERB(QueryPort, query_port);
    VERB(QueryGid, query_gid);
    VERB(QueryPkey, query_pkey);
    VERB(AllocPd, alloc_pd);
    VERB(DeallocPd, dealloc_pd);
    VERB(RegMr, reg_mr);
    VERB(ReregMr, rereg_mr);
    VERB(DeregMr, dereg_mr);
    VERB(AllocDm, alloc_dm);
    VERB(FreeDm, dealloc_dm);
    VERB(RegDmMr, reg_dm_mr);
    VERB(AllocMw, alloc_mw);
    VERB(DeallocMw, dealloc_mw);
    VERB(CreateFlow, create_flow);
    VERB(DestroyFlow, destroy_flow);
    VERB(CreateWq, create_wq);
    VERB(ModifyWq, modify_wq);
    VERB(DestroyWq, destroy_wq);
    VERB(CreateRwqIndTable, create_rwq_ind_table);
    VERB(DestroyRwqIndTable, destroy_rwq_ind_table);
    VERB(CreateRssQp, create_rss_qp);
    VERB(CreateCompChannel, create_comp_channel);
    VERB(DestroyCompChannel, destroy_comp_channel);
    VERB(CreateCq, create_cq);
    VERB(ResizeCq, resize_cq);
    VERB(DestroyCq, destroy_cq);
    VERB(CreateQp, create_qp);
    VERB(ModifyQp, modify_qp);
    VERB(QueryQp, query_qp);
    VERB(DestroyQp, destroy_qp);
    VERB(AttachMcast, attach_mcast);
    VERB(DetachMcast, detach_mcast);
    VERB(CreateSrq, create_srq);
    VERB(ModifySrq, modify_srq);
    VERB(QuerySrq, query_srq);
    VERB(DestroySrq, destroy_srq);
    VERB(CreateAh, create_ah);
    VERB(DestroyAh, destroy_ah);
    VERB(OpenXrcd, open_xrcd);
    VERB(CloseXrcd, close_xrcd);
    VERB(CreateSrqEx, create_srq_ex);
    VERB(OpenQp, open_qp);
    VERB(SrqOps, srq_ops);
    VERB(ImportObject, import_object);
#undef VERB
    return t;
}

constexpr auto kTable = make_table();

} // namespace

void dispatch_verb(Session& s, const emu::ipc::Header& h, const char* body, pid_t caller) {
    Handler fn = h.op < kTable.size() ? kTable[h.op] : nullptr;
    if (!fn) {
        s.end(std::string("no verb for op ") + emu::ipc::op_name(static_cast<Op>(h.op)));
        return;
    }
    fn(s, h, body, caller);
}

} // namespace nicsim
