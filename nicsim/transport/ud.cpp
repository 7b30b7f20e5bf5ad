// UD: one packet per message, addressed by an AH, with a DETH (Q_Key, source QPN). No ACKs, no
// retransmission; a receive that finds no WQE or the wrong Q_Key is dropped (IBA 9.6, 10.2.3).
// An AH whose DGID is a multicast GID sends to the group (IBA 10.5): DestQP 0xFFFFFF, one packet
// that the fabric replicates, and each receiving NIC delivers it to its attached QPs.
#include "ud.h"
#include "emu/wire/ipv4_header.h"
#include "emu/wire/ipv6_header.h"
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
constexpr uint8_t kL3Ipv6 = 0x1;
constexpr uint8_t kL3Ipv4 = 0x2;

uint32_t mtu_bytes(TransportEnv& env) {
    return 128u << static_cast<uint32_t>(env.nic().device().active_mtu());
}

// The 40 bytes a RoCE v2 receive buffer starts with, as rxe and mlx5 deliver them: over IPv4,
// 20 unused, then the packet's IPv4 header; over IPv6, the packet's IPv6 header, which has the
// GRH's layout (IBA A17.4.5.1). ibv_init_ah_from_wc reads the addresses back from it, and the
// TOS byte (traffic class) is the sender's.
void make_grh(uint8_t* grh, const wire::IpAddress& src, const wire::IpAddress& dst,
              size_t udp_payload_len, const IpFields& fields) {
    std::memset(grh, 0, kGrhLength);
    const auto udp_len = static_cast<uint16_t>(8 + udp_payload_len); // UDP header + payload
    if (!src.is_ipv4()) {
        wire::Ipv6Header ip;
        ip.traffic_class = fields.tos;
        ip.flow_label = fields.flow_label;
        ip.hop_limit = fields.ttl;
        ip.src_addr = src.bytes;
        ip.dst_addr = dst.bytes;
        ip.payload_length = udp_len;
        wire::put_ipv6_header(grh, ip);
        return;
    }
    wire::Ipv4Header ip;
    ip.tos = fields.tos;
    ip.id = fields.id;
    ip.ttl = fields.ttl;
    ip.src_addr = src.ipv4();
    ip.dst_addr = dst.ipv4();
    ip.payload_length = udp_len;
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
    // The AH's traffic class is the IP header's TOS byte (RoCE v2), as rxe and mlx5 send it.
    env.transmit(qp, wire::IpAddress::from_gid(dgid), buf, len, ah->attr.grh.traffic_class);
    return IBV_WC_SUCCESS;
}

void receive(TransportEnv& env, Qp& qp, const wire::IpAddress& src_addr,
             const wire::IpAddress& dst_addr, const wire::Headers& h, const uint8_t* payload,
             size_t len, size_t packet_len, const IpFields& ip) {
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
    wc.sl = kRoceV2Udp | (src_addr.is_ipv4() ? kL3Ipv4 : kL3Ipv6); // make_grh's header
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
        make_grh(buf, src_addr, dst_addr, packet_len, ip);
        std::memcpy(buf + kGrhLength, payload, len);
        if (env.dma().write(buffers.local, 0, buf, kGrhLength + len) != 0)
            wc.status = IBV_WC_LOC_PROT_ERR;
        wc.byte_len = static_cast<uint32_t>(kGrhLength + len);
    }
    transport::post_completion(env, *qp.recv_cq, wc, h.se);
}

void receive_multicast(TransportEnv& env, const wire::IpAddress& src_addr,
                       const wire::IpAddress& group, const uint8_t* mgid, const wire::Headers& h,
                       const uint8_t* payload, size_t len, size_t packet_len, const IpFields& ip) {
    Nic& nic = env.nic();
    McastCounters& counters = nic.mcast_counters();
    ++counters.rx_packets;
    const std::vector<uint32_t>* members = nic.mcast_members(mgid);
    if (!members) {
        ++counters.no_member;
        return;
    }
    // A copy of the list: completions may wake the app, but nothing here changes membership.
    const std::vector<uint32_t> qpns = *members;
    for (uint32_t qpn : qpns) {
        Qp* qp = nic.qp_by_qpn(qpn);
        if (!qp || qp->type != IBV_QPT_UD) continue;
        ++counters.rx_delivered;
        // The packet's IP destination is the group's address: the receive buffer's GRH shows it.
        receive(env, *qp, src_addr, group, h, payload, len, packet_len, ip);
    }
}

} // namespace nicsim::ud
