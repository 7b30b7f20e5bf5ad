// The CM agent's counters, one list: the struct's fields and status's "cm" object (as cm_*) come
// from it.
#pragma once

#include "support/counter_list.h"

namespace nicsim::cm {

#define NICSIM_CM_COUNTERS(X)                                                                      \
    X(rx_mads)           /* MADs that reached QP1 */                                               \
    X(tx_mads)           /* MADs sent, retransmissions included */                                 \
    X(retransmits)       /* REQ, REP, DREQ, SIDR_REQ sent again after a timeout */                 \
    X(rx_malformed)      /* not a UD SEND Only to QP1 with the GSI Q_Key, or not 256 bytes */      \
    X(rx_not_cm)         /* another management class or version, or not a Send */                  \
    X(rx_unknown_attr)   /* attribute ID of no CM message */                                       \
    X(rx_unsupported)    /* LAP, APR, ClassPortInfo: not taken on RoCE */                          \
    X(rx_duplicates)     /* REQ, REP, RTU, DREQ, MRA for a step already taken */                   \
    X(rx_unmatched)      /* naming no connection of this host (wrong comm ID or QPN) */            \
    X(rx_bad_state)      /* for a connection in a state that takes no such message */              \
    X(req_no_listener)   /* REQ or SIDR_REQ for a service nobody listens on: rejected */           \
    X(req_rejected)      /* REQ rejected for a bad IP CM header, GID or transport */               \
    X(req_backlog_drops) /* REQ dropped: the listener's backlog or the NIC's limit is full */      \
    X(timeouts)          /* requests that ran out of retries */                                    \
    X(connections)       /* connections established */

struct CmCounters {
    NICSIM_COUNTER_SET(NICSIM_CM_COUNTERS)
};

} // namespace nicsim::cm
