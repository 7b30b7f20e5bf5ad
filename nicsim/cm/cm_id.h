// A CM ID as the NIC keeps it: the rdma_cm side (addresses, port space, the app's view of the
// connection: Linux cma.c's rdma_cm_state) and the IB CM side (the connection's protocol state,
// IBA 12.9's state diagrams: Linux cm.c's ib_cm_state), with what the CM messages exchanged.
#pragma once

#include "emu/wire/cm_mad.h"
#include "emu/wire/ip_address.h"

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <vector>

namespace nicsim::cm {

class CmClient;

// cma.c's states: what the app has asked for.
enum class RdmaState : uint8_t {
    Idle,
    AddrQuery,
    AddrResolved,
    RouteQuery,
    RouteResolved,
    Connect,
    Disconnect,
    AddrBound,
    Listen,
};

// IBA 12.9.5 ff. (figures 147-152): where the connection stands on the wire.
enum class CmState : uint8_t {
    Idle,
    ReqSent,
    MraReqRcvd,
    ReqRcvd,
    MraReqSent,
    RepSent,
    MraRepRcvd,
    RepRcvd,
    MraRepSent,
    Established,
    DreqSent,
    DreqRcvd,
    Timewait,
    SidrReqSent,
    SidrReqRcvd,
};

const char* name(RdmaState s);
const char* name(CmState s);

// An endpoint, with the family the app spoke (AF_INET; AF_INET6 for IPv6 and for
// ::ffff:a.b.c.d). The address is held as its GID (IPv4-mapped for IPv4).
struct Endpoint {
    emu::wire::IpAddress addr; // unspecified: any
    uint16_t port = 0;         // host order
    uint16_t family = 0;
};

// What the NIC answers on a timeout (IBA 12.7.34): the MAD sent last, again, until the retries
// run out.
struct Outstanding {
    std::array<uint8_t, emu::wire::cm::kMadSize> mad{};
    uint64_t timeout_ms = 0;
    uint8_t retries_left = 0;
    bool active = false;
};

enum class Timer : uint8_t { None, Retransmit, AddrResolution, Timewait };

struct Multicast {
    uint32_t handle = 0;
    emu::wire::cm::Gid mgid{};
    Endpoint addr;
    uint32_t join_flags = 0;
    uint32_t events_reported = 0;
};

struct CmId {
    uint32_t handle = 0;
    CmClient* owner = nullptr;
    uint32_t channel = 0;
    uint16_t ps = 0; // enum rdma_port_space
    ibv_qp_type qp_type = IBV_QPT_RC;
    RdmaState state = RdmaState::Idle;
    CmState cm = CmState::Idle;
    bool has_cm = false; // a connection was started or requested (cma.c: cm_id.ib exists)

    Endpoint local;
    Endpoint remote;
    bool owns_port = false; // bound: the port is taken in its port space (passive IDs share)
    bool on_device = false; // bound to this host's address or resolved: id->verbs is set
    bool has_route = false;

    // rdma_set_option
    uint8_t tos = 0;
    bool reuseaddr = false;
    bool afonly = false;
    bool ack_timeout_set = false;
    uint8_t ack_timeout = 0;

    // A listener: connection requests it holds (not yet read by its app) and may hold.
    int backlog = 0;
    int pending_requests = 0;
    uint32_t listener = 0; // a passive ID: its listener, until its request was read

    // The connection, as the CM messages set it (cm.c's cm_id_private).
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint64_t remote_ca_guid = 0;
    uint64_t tid = 0; // of the REQ (or DREQ received): what REP, RTU, REJ, MRA, DREP echo
    emu::wire::IpAddress peer_addr; // where its MADs go
    emu::wire::cm::Gid peer_gid{};
    uint32_t local_qpn = 0;
    uint32_t remote_qpn = 0;
    uint32_t seq_num = 0;  // our starting PSN: our RQ's (REQ and REP carry it)
    uint32_t peer_psn = 0; // the other side's: our SQ's
    uint8_t responder_resources = 0;
    uint8_t initiator_depth = 0;
    uint8_t retry_count = 7;
    uint8_t rnr_retry_count = 7;
    bool srq = false;
    ibv_mtu path_mtu = IBV_MTU_1024;
    uint8_t av_timeout = 0;  // the QP's local ACK timeout (cm.c's av.timeout)
    uint64_t timeout_ms = 0; // for REP/DREQ answers
    uint8_t max_cm_retries = 0;
    uint32_t qkey = 0; // UD

    Outstanding out;
    Timer timer = Timer::None;
    uint64_t deadline_ms = 0;

    uint32_t events_reported = 0; // events its app has read
    std::vector<Multicast> groups;
};

} // namespace nicsim::cm
