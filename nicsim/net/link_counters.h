// What the UDP link counts: packets and datagrams each way, what it dropped and the faults it
// injected.
#pragma once

#include "support/counter_list.h"

namespace nicsim {

// icrc_ipv4_id_recovered: IPv4 packets from a peer outside the set that failed the ICRC for IP
// ID 0 and were accepted with the ID found from it (Ipv4IdPolicy::Recover): a 16-bit check, not
// 32.
#define NICSIM_LINK_COUNTERS(X)                                                                    \
    X(tx_packets)                                                                                  \
    X(tx_bytes)                                                                                    \
    X(tx_datagrams)     /* UDP sends: with GSO, one carries several packets */                     \
    X(loopback_packets) /* to this host itself: turned around inside, no socket */                 \
    X(rx_datagrams)     /* UDP receives: with GRO, one carries several packets */                  \
    X(rx_packets)                                                                                  \
    X(rx_bytes)                                                                                    \
    X(icrc_errors)                                                                                 \
    X(icrc_ipv4_id_recovered)                                                                      \
    X(malformed)                                                                                   \
    X(unknown_qp)                                                                                  \
    X(fault_drops)                                                                                 \
    X(fault_duplicates)                                                                            \
    X(fault_reorders)                                                                              \
    X(fault_corruptions)

// The multicast packets the link drops; status shows them after the NIC's (McastCounters), as
// mcast_*.
#define NICSIM_LINK_MCAST_COUNTERS(X) X(malformed) /* DestQP 0xFFFFFF without a valid trailer */
struct LinkMcastCounters {
    NICSIM_COUNTER_SET(NICSIM_LINK_MCAST_COUNTERS)
};

struct LinkCounters {
    NICSIM_COUNTER_SET(NICSIM_LINK_COUNTERS)
    LinkMcastCounters mcast;
};

} // namespace nicsim
