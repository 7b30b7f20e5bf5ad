// Tag matching: TMH parsing, the match, and the rendezvous operations the NIC issues itself.
#include "tag_matching.h"

#include "engines.h"
#include "objects/objects.h"

#include <endian.h>

#include <cstring>

namespace nicsim::tm {

std::optional<Tmh> parse_tmh(const uint8_t* payload, size_t len) {
    if (len < kTmhSize) return std::nullopt;
    ibv_tmh raw;
    std::memcpy(&raw, payload, sizeof raw);
    Tmh t{raw.opcode, be32toh(raw.app_ctx), be64toh(raw.tag)};
    switch (t.opcode) {
    case IBV_TMH_NO_TAG:
    case IBV_TMH_EAGER:
        return t;
    case IBV_TMH_RNDV:
        if (len < kTmhSize + kRvhSize) return std::nullopt;
        return t;
    default: // FIN goes to the sender's ordinary receives, never into a TM SRQ
        return std::nullopt;
    }
}

Rvh parse_rvh(const uint8_t* payload) {
    ibv_rvh raw;
    std::memcpy(&raw, payload + kTmhSize, sizeof raw);
    return {be64toh(raw.va), be32toh(raw.rkey), be32toh(raw.len)};
}

std::optional<TmTag> take_match(TagMatching& tm, uint64_t tag) {
    for (auto it = tm.tags.begin(); it != tm.tags.end(); ++it) {
        const TmTag& t = it->second;
        if (!t.enabled || (t.tag & t.mask) != (tag & t.mask)) continue;
        TmTag taken = std::move(it->second);
        tm.tags.erase(it);
        return taken;
    }
    return std::nullopt;
}

void start_rndv(TransportEnv& env, Qp& qp, TmTag&& tag, const Tmh& tmh, const Rvh& rvh) {
    SendOp op;
    op.internal = SendOp::Internal::RndvRead;
    op.tm_tag = tmh.tag;
    op.wqe.wr_id = tag.recv_wr_id;
    op.wqe.opcode = IBV_WR_RDMA_READ;
    op.wqe.remote_addr = rvh.va;
    op.wqe.rkey = rvh.rkey;
    op.local = std::move(tag.local);
    op.length = rvh.len;
    // Data larger than the tag's buffer is not fetched: the tag completes with the error.
    if (rvh.len > tag.capacity) {
        op.status = IBV_WC_LOC_LEN_ERR;
        op.started = op.done = true;
    }
    qp.req.ops.push_back(std::move(op));
    env.schedule(qp);
}

void internal_done(TransportEnv& env, Qp& qp, const SendOp& op) {
    if (op.internal != SendOp::Internal::RndvRead) return; // the FIN: nothing to report
    if (qp.recv_cq) {
        ibv_wc wc{};
        wc.wr_id = op.wqe.wr_id;
        wc.status = op.status;
        wc.opcode = IBV_WC_TM_RECV;
        wc.qp_num = qp.qpn;
        if (op.status == IBV_WC_SUCCESS) {
            wc.wc_flags = IBV_WC_TM_DATA_VALID;
            wc.byte_len = static_cast<uint32_t>(op.length);
        }
        transport::post_completion(env, *qp.recv_cq, wc, false);
    }
    if (op.status != IBV_WC_SUCCESS) return;
    // The sender learns that its buffer is free: a FIN TMH with the tag, into its receives.
    SendOp fin;
    fin.internal = SendOp::Internal::RndvFin;
    fin.tm_tag = op.tm_tag;
    fin.wqe.opcode = IBV_WR_SEND;
    ibv_tmh tmh{};
    tmh.opcode = IBV_TMH_FIN;
    tmh.tag = htobe64(op.tm_tag);
    auto* bytes = reinterpret_cast<const uint8_t*>(&tmh);
    fin.inline_data.assign(bytes, bytes + sizeof tmh);
    fin.length = sizeof tmh;
    qp.req.ops.push_back(std::move(fin));
    env.schedule(qp);
}

} // namespace nicsim::tm
