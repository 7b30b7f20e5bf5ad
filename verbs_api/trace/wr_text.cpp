// Work requests and completions as the trace shows them: enum and flag names as verbs.h spells
// them, QP numbers in hex, every SGE with its address, length and lkey, the remote address and
// rkey, immediate data and atomic operands.
#include "emu/appendf.h"
#include "emu/verbs_names.h"
#include "emu/wr_opcodes.h"
#include "trace/trace.h"

#include <arpa/inet.h>
#include <cinttypes>
#include <cstdio>

namespace verbs::trace {

namespace names = emu::names;

namespace {

using emu::appendf;

void append_sges(std::string& out, const ibv_sge* sges, size_t n) {
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; ++i)
        bytes += sges[i].length;
    appendf(out, " sge=%zu len=%" PRIu64, n, bytes);
    for (size_t i = 0; i < n; ++i)
        appendf(out, " sg_list[%zu]={addr=0x%" PRIx64 " length=%u lkey=0x%x}", i, sges[i].addr,
                sges[i].length, sges[i].lkey);
}

} // namespace

std::string qpn_text(uint32_t qpn) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", qpn);
    return buf;
}

SendWr send_wr_of(const ibv_qp* qp, const ibv_send_wr& wr) {
    SendWr w;
    w.qp_num = qp->qp_num;
    w.wr_id = wr.wr_id;
    w.opcode = wr.opcode;
    w.flags = wr.send_flags;
    if (wr.num_sge > 0 && wr.sg_list) w.sges.assign(wr.sg_list, wr.sg_list + wr.num_sge);
    if (emu::wr_has(wr.opcode, emu::kWrImm)) {
        w.has_imm = true;
        w.imm_data = wr.imm_data;
    }
    if (emu::wr_has(wr.opcode, emu::kWrInvalidate)) {
        w.has_invalidate = true;
        w.invalidate_rkey = wr.invalidate_rkey;
    }
    if (emu::wr_has(wr.opcode, emu::kWrAtomic)) {
        w.has_remote = w.has_atomic = true;
        w.remote_addr = wr.wr.atomic.remote_addr;
        w.rkey = wr.wr.atomic.rkey;
        w.compare_add = wr.wr.atomic.compare_add;
        w.swap = wr.wr.atomic.swap;
    } else if (emu::wr_has(wr.opcode, emu::kWrRemote)) {
        w.has_remote = true;
        w.remote_addr = wr.wr.rdma.remote_addr;
        w.rkey = wr.wr.rdma.rkey;
    }
    if (qp->qp_type == IBV_QPT_UD) {
        w.ah = wr.wr.ud.ah;
        w.remote_qpn = wr.wr.ud.remote_qpn;
        w.remote_qkey = wr.wr.ud.remote_qkey;
    }
    if (qp->qp_type == IBV_QPT_XRC_SEND) {
        w.has_srqn = true;
        w.remote_srqn = wr.qp_type.xrc.remote_srqn;
    }
    return w;
}

std::string send_wr_text(const SendWr& w) {
    std::string out = "send qp=" + qpn_text(w.qp_num);
    appendf(out, " wr_id=%" PRIu64, w.wr_id);
    out += " opcode=" + names::wr_opcode(w.opcode) + " flags=" + names::send_flags(w.flags);
    append_sges(out, w.sges.data(), w.sges.size());
    if (w.has_remote) appendf(out, " remote_addr=0x%" PRIx64 " rkey=0x%x", w.remote_addr, w.rkey);
    if (w.has_atomic)
        appendf(out, " compare_add=0x%" PRIx64 " swap=0x%" PRIx64, w.compare_add, w.swap);
    if (w.has_imm) appendf(out, " imm_data=0x%08x", ntohl(w.imm_data)); // as tshark shows it
    if (w.has_invalidate) appendf(out, " invalidate_rkey=0x%x", w.invalidate_rkey);
    if (w.ah) {
        out += " ah=";
        append(out, w.ah);
        out += " remote_qpn=" + qpn_text(w.remote_qpn);
        appendf(out, " remote_qkey=0x%x", w.remote_qkey);
    }
    if (w.has_srqn) appendf(out, " remote_srqn=0x%x", w.remote_srqn);
    return out;
}

std::string recv_wr_text(const char* queue, const std::string& number, const ibv_recv_wr& wr) {
    std::string out = queue + number;
    appendf(out, " wr_id=%" PRIu64, wr.wr_id);
    append_sges(out, wr.sg_list, static_cast<size_t>(std::max(wr.num_sge, 0)));
    return out;
}

std::string wc_text(const ibv_wc& wc) {
    bool ok = wc.status == IBV_WC_SUCCESS;
    std::string out = names::wc_status(wc.status) +
                      " opcode=" + (ok ? names::wc_opcode(wc.opcode) : std::string("-")) +
                      " qp=" + qpn_text(wc.qp_num);
    appendf(out, " wr_id=%" PRIu64 " len=%u", wc.wr_id, wc.byte_len);
    if (!ok) {
        if (wc.vendor_err) appendf(out, " vendor_err=0x%x", wc.vendor_err);
        return out;
    }
    if (wc.wc_flags) out += " wc_flags=" + names::wc_flags(wc.wc_flags);
    if (wc.opcode & IBV_WC_RECV) { // receives say where they came from
        if (wc.src_qp) out += " src_qp=" + qpn_text(wc.src_qp);
        if (wc.wc_flags & IBV_WC_WITH_IMM) appendf(out, " imm_data=0x%08x", ntohl(wc.imm_data));
        if (wc.wc_flags & IBV_WC_WITH_INV)
            appendf(out, " invalidated_rkey=0x%x", wc.invalidated_rkey);
    }
    return out;
}

} // namespace verbs::trace
