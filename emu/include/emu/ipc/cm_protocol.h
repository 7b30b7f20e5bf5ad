// The control protocol's rdma_cm part: what librdmacm (rdmacm_api) asks the NIC's CM agent, in
// the spirit of the kernel's rdma_ucm ABI. A CM session (Hello with kHelloCm) is one open of the
// CM device: a process has one, its event channels and CM IDs live in it, and it ends with the
// process.
//
// An event channel is a SOCK_SEQPACKET socket the NIC sends the app's end of with the reply to
// CmCreateChannel: that end is rdma_event_channel.fd, so poll() and O_NONBLOCK work on it. The
// socket holds one token (a 1-byte datagram) while the channel has events queued; the library
// reads it, then takes the oldest event with CmGetEvent (the reply sends a new token when more
// are queued). So the NIC keeps the queue, and can take back the events of an ID destroyed or
// migrated before they were read, as the kernel does; and a NIC that dies closes the socket.
#pragma once

#include "emu/ipc/protocol.h"

#include <netinet/in.h>

namespace emu::ipc {

// A CM ID's address as the app gave it: sockaddr_in or sockaddr_in6 (AF_IB is not offered).
struct CmAddr {
    sockaddr_in6 sa; // sa.sin6_family says which; an AF_INET address is a sockaddr_in in here
};

// The route of a CM ID on RoCE v2: what the library puts in rdma_route (path record, GIDs).
struct CmPath {
    uint8_t sgid[16];
    uint8_t dgid[16];
    uint32_t flow_label; // host order, 20 bits
    uint16_t pkey;       // host order
    uint8_t mtu;         // enum ibv_mtu
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint8_t sl;
    uint8_t rate; // enum ibv_rate
    uint8_t packet_life_time;
};

// Where a CM ID stands: addresses, device and route, after bind, resolution or a request.
struct CmIdInfo {
    CmAddr src;
    CmAddr dst;
    uint64_t node_guid; // network order, of the device the ID is on; 0: none yet (bound to any)
    uint8_t port_num;   // 0 with no device
    uint8_t has_route;  // `path` is valid
    uint16_t reserved;
    uint32_t reserved2;
    CmPath path;
};

inline constexpr size_t kCmMaxPrivateData = 224;

// rdma_conn_param (RC/UC) or the UD reply's parameters, with the private data.
struct CmConnParam {
    uint32_t qp_num;
    uint32_t qkey; // UD accept: 0 for the port space's default
    uint8_t srq;
    uint8_t responder_resources;
    uint8_t initiator_depth;
    uint8_t flow_control;
    uint8_t retry_count;
    uint8_t rnr_retry_count;
    uint8_t private_data_len;
    uint8_t reserved;
    uint8_t private_data[kCmMaxPrivateData];
};

struct CmChannelReply { // with the app's end of the channel's socket
    uint32_t channel;
    uint32_t reserved;
};

struct CmChannelReq {
    uint32_t channel;
    uint32_t reserved;
};

struct CmCreateIdReq {
    uint32_t channel;
    uint32_t port_space; // enum rdma_port_space
    uint32_t qp_type;    // enum ibv_qp_type: RC, UC, UD, XRC_SEND or XRC_RECV
    uint32_t reserved;
};

struct CmIdReq {
    uint32_t id;
    uint32_t reserved;
};

// DestroyId, MigrateId, LeaveMcast: the events of the ID (or group) the app has taken so far;
// rdma-core waits until it has acknowledged as many.
struct CmEventsReply {
    uint32_t events_reported;
    uint32_t reserved;
};

struct CmMigrateReq {
    uint32_t id;
    uint32_t channel; // the new one
};

struct CmBindReq {
    uint32_t id;
    uint32_t reserved;
    CmAddr addr;
};

struct CmResolveAddrReq {
    uint32_t id;
    int32_t timeout_ms;
    uint32_t has_src;
    uint32_t reserved;
    CmAddr src;
    CmAddr dst;
};

struct CmResolveRouteReq {
    uint32_t id;
    int32_t timeout_ms;
};

struct CmListenReq {
    uint32_t id;
    int32_t backlog;
};

struct CmConnectReq {
    uint32_t id;
    uint32_t reserved;
    CmConnParam param;
};

struct CmRejectReq {
    uint32_t id;
    uint8_t reason; // 0: consumer defined (28); 35: vendor option not supported (rdma_reject_ece)
    uint8_t private_data_len;
    uint16_t reserved;
    uint8_t private_data[kCmMaxPrivateData];
};

struct CmNotifyReq {
    uint32_t id;
    uint32_t event; // enum ibv_event_type
};

struct CmInitQpAttrReq {
    uint32_t id;
    uint32_t qp_state; // enum ibv_qp_state wanted
};
struct CmInitQpAttrReply {
    ibv_qp_attr attr;
    int32_t mask; // enum ibv_qp_attr_mask
    uint32_t reserved;
};

inline constexpr size_t kCmMaxOption = 256;
struct CmSetOptionReq {
    uint32_t id;
    int32_t level;
    int32_t optname;
    uint32_t optlen;
    uint8_t optval[kCmMaxOption];
};

struct CmJoinMcastReq {
    uint32_t id;
    uint32_t join_flags; // enum rdma_cm_mc_join_flags
    CmAddr addr;
};

struct CmLeaveMcastReq {
    uint32_t id;
    uint32_t mc;
};

// One rdma_cm event, as CmGetEvent returns it.
struct CmEventRecord {
    uint32_t event; // enum rdma_cm_event_type
    int32_t status;
    uint32_t id;        // CONNECT_REQUEST: the new ID (the listener's channel gets it)
    uint32_t listen_id; // CONNECT_REQUEST: the listener
    uint32_t mc;        // MULTICAST_JOIN / MULTICAST_ERROR: the group
    uint32_t qp_type;   // CONNECT_REQUEST: the new ID's (enum ibv_qp_type)
    CmConnParam conn;   // RC/UC events; its private data also serves UD events
    ibv_ah_attr ah;     // UD: ESTABLISHED (the peer), MULTICAST_JOIN (the group)
    uint32_t ud_qp_num;
    uint32_t ud_qkey;
    uint32_t has_info; // `info` is valid: ADDR_RESOLVED, ROUTE_RESOLVED, CONNECT_REQUEST
    uint32_t reserved;
    CmIdInfo info;
};

// "RDMA_CM_EVENT_ADDR_RESOLVED" ... as rdma_event_str() names them; "UNKNOWN EVENT" otherwise.
const char* cm_event_name(uint32_t event);

EMU_IPC_CM_OPS(EMU_IPC_OP_TYPES)

} // namespace emu::ipc
