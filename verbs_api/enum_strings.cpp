// Human-readable names of verbs enums, worded exactly as rdma-core 44 words them (tools such as
// ibv_devinfo print them, and scripts match on them). Out-of-range values give "unknown".

#include "export.h"

#include <infiniband/verbs.h>

#include <array>

namespace {

// Looks up value in a table whose first entry describes the enum value `first`.
template <size_t N>
const char* lookup(const std::array<const char*, N>& table, int first, int value) {
    if (value < first || value - first >= static_cast<int>(N)) return "unknown";
    return table[static_cast<size_t>(value - first)];
}

} // namespace

VERBS_EXPORT const char* ibv_node_type_str(ibv_node_type node_type) {
    static constexpr std::array<const char*, 7> names = {
        "InfiniBand channel adapter", // IBV_NODE_CA
        "InfiniBand switch",          // IBV_NODE_SWITCH
        "InfiniBand router",          // IBV_NODE_ROUTER
        "iWARP NIC",                  // IBV_NODE_RNIC
        "usNIC",                      // IBV_NODE_USNIC
        "usNIC UDP",                  // IBV_NODE_USNIC_UDP
        "unspecified",                // IBV_NODE_UNSPECIFIED
    };
    static_assert(IBV_NODE_UNSPECIFIED - IBV_NODE_CA + 1 == names.size());
    return lookup(names, IBV_NODE_CA, node_type);
}

VERBS_EXPORT const char* ibv_port_state_str(ibv_port_state port_state) {
    static constexpr std::array<const char*, 6> names = {
        "no state change (NOP)", // IBV_PORT_NOP
        "down",                  // IBV_PORT_DOWN
        "init",                  // IBV_PORT_INIT
        "armed",                 // IBV_PORT_ARMED
        "active",                // IBV_PORT_ACTIVE
        "active defer",          // IBV_PORT_ACTIVE_DEFER
    };
    static_assert(IBV_PORT_ACTIVE_DEFER - IBV_PORT_NOP + 1 == names.size());
    return lookup(names, IBV_PORT_NOP, port_state);
}

VERBS_EXPORT const char* ibv_event_type_str(ibv_event_type event) {
    static constexpr std::array<const char*, 20> names = {
        "CQ error",                                // IBV_EVENT_CQ_ERR
        "local work queue catastrophic error",     // IBV_EVENT_QP_FATAL
        "invalid request local work queue error",  // IBV_EVENT_QP_REQ_ERR
        "local access violation work queue error", // IBV_EVENT_QP_ACCESS_ERR
        "communication established",               // IBV_EVENT_COMM_EST
        "send queue drained",                      // IBV_EVENT_SQ_DRAINED
        "path migrated",                           // IBV_EVENT_PATH_MIG
        "path migration request error",            // IBV_EVENT_PATH_MIG_ERR
        "local catastrophic error",                // IBV_EVENT_DEVICE_FATAL
        "port active",                             // IBV_EVENT_PORT_ACTIVE
        "port error",                              // IBV_EVENT_PORT_ERR
        "LID change",                              // IBV_EVENT_LID_CHANGE
        "P_Key change",                            // IBV_EVENT_PKEY_CHANGE
        "SM change",                               // IBV_EVENT_SM_CHANGE
        "SRQ catastrophic error",                  // IBV_EVENT_SRQ_ERR
        "SRQ limit reached",                       // IBV_EVENT_SRQ_LIMIT_REACHED
        "last WQE reached",                        // IBV_EVENT_QP_LAST_WQE_REACHED
        "client reregistration",                   // IBV_EVENT_CLIENT_REREGISTER
        "GID table change",                        // IBV_EVENT_GID_CHANGE
        "WQ fatal",                                // IBV_EVENT_WQ_FATAL
    };
    static_assert(IBV_EVENT_WQ_FATAL - IBV_EVENT_CQ_ERR + 1 == names.size());
    return lookup(names, IBV_EVENT_CQ_ERR, event);
}

VERBS_EXPORT const char* ibv_wc_status_str(ibv_wc_status status) {
    static constexpr std::array<const char*, 24> names = {
        "success",                           // IBV_WC_SUCCESS
        "local length error",                // IBV_WC_LOC_LEN_ERR
        "local QP operation error",          // IBV_WC_LOC_QP_OP_ERR
        "local EE context operation error",  // IBV_WC_LOC_EEC_OP_ERR
        "local protection error",            // IBV_WC_LOC_PROT_ERR
        "Work Request Flushed Error",        // IBV_WC_WR_FLUSH_ERR
        "memory management operation error", // IBV_WC_MW_BIND_ERR
        "bad response error",                // IBV_WC_BAD_RESP_ERR
        "local access error",                // IBV_WC_LOC_ACCESS_ERR
        "remote invalid request error",      // IBV_WC_REM_INV_REQ_ERR
        "remote access error",               // IBV_WC_REM_ACCESS_ERR
        "remote operation error",            // IBV_WC_REM_OP_ERR
        "transport retry counter exceeded",  // IBV_WC_RETRY_EXC_ERR
        "RNR retry counter exceeded",        // IBV_WC_RNR_RETRY_EXC_ERR
        "local RDD violation error",         // IBV_WC_LOC_RDD_VIOL_ERR
        "remote invalid RD request",         // IBV_WC_REM_INV_RD_REQ_ERR
        "aborted error",                     // IBV_WC_REM_ABORT_ERR
        "invalid EE context number",         // IBV_WC_INV_EECN_ERR
        "invalid EE context state",          // IBV_WC_INV_EEC_STATE_ERR
        "fatal error",                       // IBV_WC_FATAL_ERR
        "response timeout error",            // IBV_WC_RESP_TIMEOUT_ERR
        "general error",                     // IBV_WC_GENERAL_ERR
        "TM error",                          // IBV_WC_TM_ERR
        "TM software rendezvous",            // IBV_WC_TM_RNDV_INCOMPLETE
    };
    static_assert(IBV_WC_TM_RNDV_INCOMPLETE - IBV_WC_SUCCESS + 1 == names.size());
    return lookup(names, IBV_WC_SUCCESS, status);
}
