// The library's halves of the rdma_cm objects: each wraps the public struct the app sees
// (always the first member, so a pointer to one is a pointer to the other), as rdma-core's
// cma_id_private and cma_event do.
#pragma once

#include "emu/ipc/cm_protocol.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rdmacm {

// An opened device the CM IDs on it share: one ibv_context per device and process, as in
// rdma-core, with a PD for the IDs whose app gives none and an XRC domain for the XRC_RECV QPs
// and XRC SRQs of IDs whose app gives none (opened on first use).
struct CmDevice {
    ibv_context* verbs = nullptr;
    ibv_pd* pd = nullptr;
    ibv_xrcd* xrcd = nullptr;
    uint64_t guid = 0; // network order
    uint8_t max_initiator_depth = 0;
    uint8_t max_responder_resources = 0;
    int refs = 0;
};

struct CmChannel {
    rdma_event_channel channel; // .fd: the app's end of the channel's socket
    uint32_t handle = 0;
};

struct CmMulticast {
    void* context = nullptr;
    sockaddr_storage addr{};
    uint32_t handle = 0;
    uint32_t join_flags = 0;
    ibv_gid mgid{};
    uint16_t mlid = 0;
    uint32_t events_completed = 0;
};

struct CmId {
    rdma_cm_id id;
    uint32_t handle = 0;
    CmDevice* device = nullptr;
    bool sync = false; // made with no channel: it has an internal one, events are waited for
    std::mutex mutex;
    std::condition_variable acked;
    uint32_t events_completed = 0; // events of this ID the app acknowledged
    uint8_t initiator_depth = 0;
    uint8_t responder_resources = 0;
    bool connect_error = false; // CONNECT_RESPONSE failed here: later REJECTED/DISCONNECTED hidden
    ibv_qp_init_attr* qp_init_attr = nullptr; // rdma_create_ep, passive: for rdma_get_request
    std::vector<uint8_t> connect_data;        // rdma_create_ep: rai->ai_connect
    std::vector<CmMulticast*> groups;
    ibv_ece local_ece{};
    ibv_ece remote_ece{};
};

struct CmEvent {
    rdma_cm_event event;
    CmId* id = nullptr;
    CmMulticast* mc = nullptr;
    uint8_t private_data[emu::ipc::kCmMaxPrivateData];
};

inline CmId* priv(rdma_cm_id* id) {
    return reinterpret_cast<CmId*>(id);
}
inline CmChannel* priv(rdma_event_channel* ch) {
    return reinterpret_cast<CmChannel*>(ch);
}

// errno = e, and -1: how every librdmacm call reports an error.
inline int fail(int e) {
    errno = e;
    return -1;
}

} // namespace rdmacm
