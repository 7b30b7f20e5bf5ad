#include "transport/packet_router.h"

#include "nic/nic.h"
#include "transport/engines.h"
#include "transport/transport_env.h"
#include "transport/ud.h"

#include "emu/wire/multicast.h"

#include <string>

namespace nicsim {

namespace wire = emu::wire;

namespace {
constexpr uint32_t kGsiQpn = 1; // IBA 9.6.1.1.1: QP1, the general services interface
} // namespace

PacketRouter::PacketRouter(TransportEnv& env, LinkCounters& counters, uint16_t set_port,
                           SetMembers in_set)
    : env_(env), counters_(counters), set_port_(set_port), in_set_(std::move(in_set)) {}

// Connected QPs take packets from their peer alone: its address (the QP's destination GID, as
// rxe checks) and the UDP port every host of the set sends from. On one machine the peer's
// daemon holds that address and port, so no other process can send from them. (A real RoCE v2
// NIC sends from a varying source port, which receivers ignore; see docs/security.md.)
bool PacketRouter::from_peer(const Qp& qp, const wire::IpEndpoint& from) const {
    if (from.addr != transport::dest_addr(qp)) return false;
    // A peer outside the set (Linux Soft-RoCE, another machine's RoCE NIC) sends from a port of
    // its own per QP (rxe_net.c: 0xC000 | a hash of the QPNs), which RoCE receivers ignore.
    return !in_set_(from.addr) || from.port == set_port_;
}

void PacketRouter::route(const wire::IpEndpoint& from, uint8_t* data, size_t len,
                         const uint8_t* mgid, const IpFields& ip) {
    wire::Headers h;
    const uint8_t* payload = nullptr;
    size_t payload_len = 0;
    wire::ParseResult r = wire::parse(data, len, h, &payload, &payload_len);
    if (r != wire::ParseResult::Ok) {
        ++counters_.malformed;
        env_.log().debug("dropped malformed packet from {}: {}", from.addr.text(),
                         wire::describe(r));
        return;
    }
    if (mgid) { // DestQP 0xFFFFFF with its group (the link checked the trailer)
        if (!wire::has(h.opcode, wire::kUD) || h.pkey != wire::kDefaultPkey) {
            ++counters_.unknown_qp; // only UD datagrams go to groups
            return;
        }
        const wire::IpAddress& self = env_.nic().device().config().address;
        ud::receive_multicast(env_, from.addr, wire::multicast_group_address(mgid, !self.is_ipv4()),
                              mgid, h, payload, payload_len, len, ip);
        return;
    }
    if (h.dest_qpn == kGsiQpn && gsi_) return gsi_(from, h, payload, payload_len);
    Qp* qp = env_.nic().qp_by_qpn(h.dest_qpn);
    if (!qp || h.pkey != wire::kDefaultPkey) {
        ++counters_.unknown_qp;
        return;
    }
    // Datagrams come from anyone, as on any fabric: the Q_Key is the access check of UD.
    if (qp->type == IBV_QPT_UD && wire::has(h.opcode, wire::kUD)) {
        ud::receive(env_, *qp, from.addr, env_.nic().device().config().address, h, payload,
                    payload_len, len, ip);
        return;
    }
    // The opcode's transport must be the QP's (rxe makes the same check).
    // XRC: the initiator (XRC_SEND) takes only responses, the target (XRC_RECV) only requests.
    bool type_ok =
        (qp->type == IBV_QPT_RC && wire::has(h.opcode, wire::kRC)) ||
        (qp->type == IBV_QPT_UC && wire::has(h.opcode, wire::kUC)) ||
        (qp->type == IBV_QPT_XRC_SEND && wire::has(h.opcode, wire::kXRC | wire::kResponse)) ||
        (qp->type == IBV_QPT_XRC_RECV && wire::has(h.opcode, wire::kXRC | wire::kRequest));
    if (!type_ok || h.dest_qpn != qp->qpn) {
        ++counters_.unknown_qp;
        return;
    }
    if (!from_peer(*qp, from)) {
        transport::count_drop(env_, *qp, &DropCounters::wrong_source);
        env_.log().debug("qp {:#x}: {} psn {:#x} from {} port {} dropped: the peer is {} port {}",
                         qp->qpn, wire::opcode_name(h.opcode), h.psn, from.addr.text(), from.port,
                         transport::dest_addr(*qp).text(), set_port_);
        return;
    }
    transport::receive(env_, *qp, h, payload, payload_len);
}

} // namespace nicsim
