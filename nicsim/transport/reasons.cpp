#include "reasons.h"

#include "emu/verbs_names.h"
#include "engines.h"
#include "nic/nic.h"
#include "nic/report.h"
#include "objects/objects.h"

#include <spdlog/fmt/fmt.h>

namespace nicsim::transport {

uint32_t explain(TransportEnv& env, const Qp& qp, emu::ipc::ReasonKind kind,
                 const std::string& headline, const std::string& text) {
    return report(env.nic(), env.log(), qp.owner, kind, qp.qpn, headline, text);
}

void fail_op(TransportEnv& env, const Qp& qp, SendOp& op, ibv_wc_status status,
             const std::string& why) {
    op.status = status;
    op.done = true;
    std::string headline = fmt::format("{} for wr_id {} ({})", emu::names::wc_status(status),
                                       op.wqe.wr_id, emu::names::wr_opcode(op.wqe.opcode));
    op.reason = explain(env, qp, emu::ipc::ReasonKind::Completion, headline, why);
}

std::string peer_of(const Qp& qp) {
    return fmt::format("{} qp {:#x}", dest_addr(qp).text(), qp.attr.dest_qp_num);
}

std::string nak_meaning(emu::wire::NakCode code) {
    using emu::wire::NakCode;
    switch (code) {
    case NakCode::RemoteAccessError:
        return "NAK remote access error: its rkey, the range against its MR or the MR's rights "
               "do not allow the access";
    case NakCode::InvalidRequest:
        return "NAK invalid request: its QP does not allow the operation (qp_access_flags), or "
               "the opcode sequence, the length or an atomic's alignment is wrong";
    case NakCode::RemoteOperationalError:
        return "NAK remote operational error: it could not execute the request (its receive "
               "WQE is bad, or its memory is gone)";
    case NakCode::InvalidRdRequest:
        return "NAK invalid RD request";
    case NakCode::PsnSequenceError:
        return "NAK PSN sequence error";
    }
    return "an unknown NAK";
}

std::string count_of(uint64_t n, const char* what) {
    return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
}

} // namespace nicsim::transport
