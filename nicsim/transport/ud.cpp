// UD: one packet per message, addressed by an AH, with a DETH (Q_Key, source QPN). No ACKs, no
// retransmission; a receive that finds no WQE or the wrong Q_Key is dropped (IBA 9.6, 10.2.3).
// An AH whose DGID is a multicast GID sends to the group (IBA 10.5): DestQP 0xFFFFFF, one packet
// that the fabric replicates, and each receiving NIC delivers it to its attached QPs.
#include "ud.h"
#include "emu/wire/ipv4_header.h"
#include "emu/wire/multicast.h"
#include "emu/wire/psn.h"
#include "memory_access.h"
#include "nic/nic.h"
#include "objects/session_objects.h"
#include "recv_queue.h"

#include <cstring>

namespace nicsim::ud {

namespace wire = emu::wire;

namespace {

constexpr size_t kGrhLength = 40;
constexpr uint32_t kPrivilegedQkeyBit = 0x80000000; // IBA 10.2.4: use the QP's own Q_Key

// What a UD receive's wc.sl holds on RoCE, as mlx5 reports it (its CQE's roce_pktype, passed on
// by rdma-core's mlx5 provider as `(flags_rqpn >> 24) & 0xf`): bit 3, the frame had a UDP header
// (RoCE v2); bits 2:0, the L3 header in the receive buffer's first 40 bytes, 0 a GRH, 1 IPv6,
// 2 IPv4. UCX reads it to find the DGID in that area (uct_ud_iface_check_grh); RoCE v2 has no
// SL on the wire (IBA A17.4.5.1: the CQE carries the network header type instead).
constexpr uint8_t kRoceV2Udp = 0x8;
constexpr uint8_t kL3Ipv4 = 0x2;
constexpr uint8_t kRoceV2Ipv4PacketType = kRoceV2Udp | kL3Ipv4;

uint32_t mtu_bytes(TransportEnv& env) {
    return 128u << static_cast<uint32_t>(env.nic().device().active_mtu());
}

// The 40 bytes a RoCE v2 (IPv4) receive buffer starts with: 20 unused, then the packet's IPv4
// header, as rxe and mlx5 deliver it; ibv_init_ah_from_wc reads the addresses back from it, and
// the TOS byte is the sender's traffic class.
void make_grh(uint8_t* grh, uint32_t src, uint32_t dst, size_t udp_payload_len, uint8_t tos) {
    std::memset(grh, 0, kGrhLength);
    wire::Ipv4Header ip;
    ip.tos = tos;
    ip.src_addr = src;
    ip.dst_addr = dst;
    ip.payload_length = static_cast<uint16_t>(8 + udp_payload_len); // UDP header + payload
    wire::put_ipv4_header(grh + 20, ip);
}

} // namespace

ibv_wc_status send(TransportEnv& env, Qp& qp, SendOp& op) {
    const emu::ipc::SendWqe& w = op.wqe;
    if (op.length > mtu_bytes(env)) return IBV_WC_LOC_LEN_ERR; // UD messages fit one packet
    const Ah* ah = qp.owner ? qp.owner->ahs.get(w.ah) : nullptr;
    if (!ah || ah->pd != qp.pd) return IBV_WC_LOC_QP_OP_ERR;
    uint8_t* buf = env.packet_buffer();
    wire::Headers h;
    bool imm = op.has(emu::kWrImm);
    h.opcode = imm ? wire::opcode::kUdSendOnlyImm : wire::opcode::kUdSendOnly;
    h.se = w.send_flags & IBV_SEND_SOLICITED;
    const uint8_t* dgid = ah->attr.grh.dgid.raw;
    const bool multicast = wire::is_multicast_gid(dgid);
    // A multicast packet's DestQP is the multicast QPN whatever the WR's remote_qpn says.
    h.dest_qpn = multicast ? wire::kMulticastQpn : w.remote_qpn & wire::kQpnMask;
    h.psn = qp.req.next_psn;
    qp.req.next_psn = wire::psn_add(qp.req.next_psn, 1);
    h.deth = {(w.remote_qkey & kPrivilegedQkeyBit) ? qp.attr.qkey : w.remote_qkey, qp.qpn};
    if (imm) h.imm = w.imm_data;
    uint8_t* payload = buf + wire::header_length(h.opcode);
    if (!op.inline_data.empty()) {
        std::memcpy(payload, op.inline_data.data(), op.length);
    } else if (op.length) {
        if (env.dma().read(op.local, 0, payload, op.length) != 0) return IBV_WC_LOC_PROT_ERR;
    }
    size_t len = wire::build_in_place(h, op.length, buf);
    ++qp.counters.tx_packets;
    qp.counters.tx_bytes += op.length;
    if (multicast) {
        ++env.nic().mcast_counters().tx_packets;
        env.transmit_multicast(qp, dgid, buf, len, ah->attr.grh.traffic_class);
        return IBV_WC_SUCCESS;
    }
    uint32_t dst;
    std::memcpy(&dst, &dgid[12], 4);
    // The AH's traffic class is the IP header's TOS byte (RoCE v2), as rxe and mlx5 send it.
    env.transmit(qp, dst, buf, len, ah->attr.grh.traffic_class);
    return IBV_WC_SUCCESS;
}

void receive(TransportEnv& env, Qp& qp, uint32_t src_addr, uint32_t dst_addr,
             const wire::Headers& h, const uint8_t* payload, size_t len, size_t packet_len,
             uint8_t tos) {
    ++qp.counters.rx_packets;
    qp.counters.rx_bytes += len;
    if (qp.attr.qp_state != IBV_QPS_RTR && qp.attr.qp_state != IBV_QPS_RTS) return;
    if (h.deth.qkey != qp.attr.qkey) { // Q_Key violation: dropped, counted
        ++qp.counters.qkey_violations;
        return;
    }
    RecvTarget t =
        qp.srq ? RecvTarget{&qp.srq->ring,        qp.srq,     qp.srq->pd,
                            qp.srq->attr.max_sge, qp.recv_cq, qp.qpn}
               : RecvTarget{&qp.rq, nullptr, qp.pd, qp.cap.max_recv_sge, qp.recv_cq, qp.qpn};
    RecvBuffers buffers;
    ibv_wc_status status;
    if (!take_recv(env, t, buffers, &status)) {
        ++qp.counters.rx_no_wqe; // no receive posted: UD simply drops
        return;
    }
    ibv_wc wc{};
    wc.wr_id = buffers.wr_id;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = qp.qpn;
    wc.src_qp = h.deth.src_qpn;
    wc.wc_flags = IBV_WC_GRH;
    wc.sl = kRoceV2Ipv4PacketType; // hosts have IPv4 addresses only: make_grh's header
    if (h.opcode == wire::opcode::kUdSendOnlyImm) {
        wc.wc_flags |= IBV_WC_WITH_IMM;
        wc.imm_data = h.imm;
    }
    wc.status = status;
    if (wc.status == IBV_WC_SUCCESS && buffers.capacity < kGrhLength + len)
        wc.status = IBV_WC_LOC_LEN_ERR;
    if (wc.status == IBV_WC_SUCCESS) {
        // GRH and payload in one write, as the NIC would scatter them.
        uint8_t buf[kGrhLength + transport::kMaxPacket];
        make_grh(buf, src_addr, dst_addr, packet_len, tos);
        std::memcpy(buf + kGrhLength, payload, len);
        if (env.dma().write(buffers.local, 0, buf, kGrhLength + len) != 0)
            wc.status = IBV_WC_LOC_PROT_ERR;
        wc.byte_len = static_cast<uint32_t>(kGrhLength + len);
    }
    transport::post_completion(env, *qp.recv_cq, wc, h.se);
}

void receive_multicast(TransportEnv& env, uint32_t src_addr, const uint8_t* mgid,
                       const wire::Headers& h, const uint8_t* payload, size_t len,
                       size_t packet_len, uint8_t tos) {
    Nic& nic = env.nic();
    McastCounters& counters = nic.mcast_counters();
    ++counters.rx_packets;
    const std::vector<uint32_t>* members = nic.mcast_members(mgid);
    if (!members) {
        ++counters.no_member;
        return;
    }
    // The packet's IP destination is the group's address: the receive buffer's GRH shows it.
    const uint32_t dst_addr = wire::multicast_ipv4(mgid);
    // A copy of the list: completions may wake the app, but nothing here changes membership.
    const std::vector<uint32_t> qpns = *members;
    for (uint32_t qpn : qpns) {
        Qp* qp = nic.qp_by_qpn(qpn);
        if (!qp || qp->type != IBV_QPT_UD) continue;
        ++counters.rx_delivered;
        receive(env, *qp, src_addr, dst_addr, h, payload, len, packet_len, tos);
    }
}

} // namespace nicsim::ud
