// What the CM agent knows of its host and fabric, and its timing (IBA 12.7.34 ff.: response
// timeout, retries, packet lifetime), with the Linux rdma_cm defaults.
#pragma once

#include "emu/wire/ip_address.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

namespace nicsim {
class Device;
}

namespace nicsim::cm {

struct CmConfig {
    emu::wire::IpAddress local_addr;         // this host's address, IPv4 or IPv6
    std::vector<emu::wire::IpAddress> hosts; // every host of the set: what resolves
    uint64_t node_guid = 0;                  // network order: the REQ/REP local CA GUID
    ibv_mtu mtu = IBV_MTU_1024;              // the port's active MTU: the path MTU
    uint8_t ack_delay = 15;                  // the device's local_ca_ack_delay
    ibv_rate rate = IBV_RATE_100_GBPS;
    // 4.096 us * 2^x the other side may take to answer, as cma.c's CMA_CM_RESPONSE_TIMEOUT.
    uint8_t response_timeout = 20;
    uint8_t max_retries = 15; // CMA_MAX_CM_RETRIES
    // CMA_IBOE_PACKET_LIFETIME: 4.096 us * 2^16, the RoCE path's packet lifetime.
    uint8_t packet_life_time = 16;
    // A MRA asks for 4.096 us * 2^24 (CMA_CM_MRA_SETTING) before the REP or RTU comes.
    uint8_t mra_service_timeout = 24;
    // Connection requests a listener holds at most when its backlog is 0 or larger (ucma's
    // max_backlog), and passive IDs waiting for their app across the whole NIC.
    int max_backlog = 1024;
    int max_pending_requests = 4096;
};

// The CM of the host whose device this is: its address and GUID, the set's hosts, its port's
// MTU and the daemon's --cm-* options.
CmConfig config_for(const Device& device);

// IBA's time unit: 4.096 us * 2^t, in whole milliseconds as Linux's cm_convert_to_ms rounds it.
constexpr uint64_t iba_time_ms(uint8_t t) {
    return 1ull << (t > 8 ? t - 8 : 0);
}

} // namespace nicsim::cm
