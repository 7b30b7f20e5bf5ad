#include "emu/ipc/cm_protocol.h"

#include <rdma/rdma_cma.h>

#include <iterator>

namespace emu::ipc {

const char* cm_event_name(uint32_t event) {
    static constexpr const char* kNames[] = {
        "RDMA_CM_EVENT_ADDR_RESOLVED",   "RDMA_CM_EVENT_ADDR_ERROR",
        "RDMA_CM_EVENT_ROUTE_RESOLVED",  "RDMA_CM_EVENT_ROUTE_ERROR",
        "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
        "RDMA_CM_EVENT_CONNECT_ERROR",   "RDMA_CM_EVENT_UNREACHABLE",
        "RDMA_CM_EVENT_REJECTED",        "RDMA_CM_EVENT_ESTABLISHED",
        "RDMA_CM_EVENT_DISCONNECTED",    "RDMA_CM_EVENT_DEVICE_REMOVAL",
        "RDMA_CM_EVENT_MULTICAST_JOIN",  "RDMA_CM_EVENT_MULTICAST_ERROR",
        "RDMA_CM_EVENT_ADDR_CHANGE",     "RDMA_CM_EVENT_TIMEWAIT_EXIT",
    };
    static_assert(std::size(kNames) == RDMA_CM_EVENT_TIMEWAIT_EXIT + 1);
    return event < std::size(kNames) ? kNames[event] : "UNKNOWN EVENT";
}

} // namespace emu::ipc
