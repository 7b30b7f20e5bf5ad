#include "emu/verbs_names.h"

#include "emu/wr_opcodes.h"

#include <infiniband/verbs.h>

#include <cstdio>
#include <span>
#include <string_view>

namespace emu::names {
namespace {

struct Name {
    uint32_t value;
    const char* name;
};

#define N(x)                                                                                       \
    { x, #x }
constexpr Name kQpTypes[] = {N(IBV_QPT_RC),         N(IBV_QPT_UC),       N(IBV_QPT_UD),
                             N(IBV_QPT_RAW_PACKET), N(IBV_QPT_XRC_SEND), N(IBV_QPT_XRC_RECV),
                             N(IBV_QPT_DRIVER)};
constexpr Name kQpStates[] = {N(IBV_QPS_RESET), N(IBV_QPS_INIT),   N(IBV_QPS_RTR),
                              N(IBV_QPS_RTS),   N(IBV_QPS_SQD),    N(IBV_QPS_SQE),
                              N(IBV_QPS_ERR),   N(IBV_QPS_UNKNOWN)};
constexpr Name kMtus[] = {N(IBV_MTU_256), N(IBV_MTU_512), N(IBV_MTU_1024), N(IBV_MTU_2048),
                          N(IBV_MTU_4096)};
constexpr Name kWcOpcodes[] = {N(IBV_WC_SEND),
                               N(IBV_WC_RDMA_WRITE),
                               N(IBV_WC_RDMA_READ),
                               N(IBV_WC_COMP_SWAP),
                               N(IBV_WC_FETCH_ADD),
                               N(IBV_WC_BIND_MW),
                               N(IBV_WC_LOCAL_INV),
                               N(IBV_WC_TSO),
                               N(IBV_WC_ATOMIC_WRITE),
                               N(IBV_WC_RECV),
                               N(IBV_WC_RECV_RDMA_WITH_IMM),
                               N(IBV_WC_TM_ADD),
                               N(IBV_WC_TM_DEL),
                               N(IBV_WC_TM_SYNC),
                               N(IBV_WC_TM_RECV),
                               N(IBV_WC_TM_NO_TAG),
                               N(IBV_WC_DRIVER1),
                               N(IBV_WC_DRIVER2),
                               N(IBV_WC_DRIVER3)};
constexpr Name kWcStatuses[] = {N(IBV_WC_SUCCESS),
                                N(IBV_WC_LOC_LEN_ERR),
                                N(IBV_WC_LOC_QP_OP_ERR),
                                N(IBV_WC_LOC_EEC_OP_ERR),
                                N(IBV_WC_LOC_PROT_ERR),
                                N(IBV_WC_WR_FLUSH_ERR),
                                N(IBV_WC_MW_BIND_ERR),
                                N(IBV_WC_BAD_RESP_ERR),
                                N(IBV_WC_LOC_ACCESS_ERR),
                                N(IBV_WC_REM_INV_REQ_ERR),
                                N(IBV_WC_REM_ACCESS_ERR),
                                N(IBV_WC_REM_OP_ERR),
                                N(IBV_WC_RETRY_EXC_ERR),
                                N(IBV_WC_RNR_RETRY_EXC_ERR),
                                N(IBV_WC_LOC_RDD_VIOL_ERR),
                                N(IBV_WC_REM_INV_RD_REQ_ERR),
                                N(IBV_WC_REM_ABORT_ERR),
                                N(IBV_WC_INV_EECN_ERR),
                                N(IBV_WC_INV_EEC_STATE_ERR),
                                N(IBV_WC_FATAL_ERR),
                                N(IBV_WC_RESP_TIMEOUT_ERR),
                                N(IBV_WC_GENERAL_ERR),
                                N(IBV_WC_TM_ERR),
                                N(IBV_WC_TM_RNDV_INCOMPLETE)};
constexpr Name kEvents[] = {N(IBV_EVENT_CQ_ERR),
                            N(IBV_EVENT_QP_FATAL),
                            N(IBV_EVENT_QP_REQ_ERR),
                            N(IBV_EVENT_QP_ACCESS_ERR),
                            N(IBV_EVENT_COMM_EST),
                            N(IBV_EVENT_SQ_DRAINED),
                            N(IBV_EVENT_PATH_MIG),
                            N(IBV_EVENT_PATH_MIG_ERR),
                            N(IBV_EVENT_DEVICE_FATAL),
                            N(IBV_EVENT_PORT_ACTIVE),
                            N(IBV_EVENT_PORT_ERR),
                            N(IBV_EVENT_LID_CHANGE),
                            N(IBV_EVENT_PKEY_CHANGE),
                            N(IBV_EVENT_SM_CHANGE),
                            N(IBV_EVENT_SRQ_ERR),
                            N(IBV_EVENT_SRQ_LIMIT_REACHED),
                            N(IBV_EVENT_QP_LAST_WQE_REACHED),
                            N(IBV_EVENT_CLIENT_REREGISTER),
                            N(IBV_EVENT_GID_CHANGE),
                            N(IBV_EVENT_WQ_FATAL)};
// Flag sets: one bit per entry, in the order verbs.h lists them.
constexpr Name kAccessFlags[] = {
    N(IBV_ACCESS_LOCAL_WRITE),   N(IBV_ACCESS_REMOTE_WRITE), N(IBV_ACCESS_REMOTE_READ),
    N(IBV_ACCESS_REMOTE_ATOMIC), N(IBV_ACCESS_MW_BIND),      N(IBV_ACCESS_ZERO_BASED),
    N(IBV_ACCESS_ON_DEMAND),     N(IBV_ACCESS_HUGETLB),      N(IBV_ACCESS_RELAXED_ORDERING)};
constexpr Name kQpAttrMask[] = {N(IBV_QP_STATE),
                                N(IBV_QP_CUR_STATE),
                                N(IBV_QP_EN_SQD_ASYNC_NOTIFY),
                                N(IBV_QP_ACCESS_FLAGS),
                                N(IBV_QP_PKEY_INDEX),
                                N(IBV_QP_PORT),
                                N(IBV_QP_QKEY),
                                N(IBV_QP_AV),
                                N(IBV_QP_PATH_MTU),
                                N(IBV_QP_TIMEOUT),
                                N(IBV_QP_RETRY_CNT),
                                N(IBV_QP_RNR_RETRY),
                                N(IBV_QP_RQ_PSN),
                                N(IBV_QP_MAX_QP_RD_ATOMIC),
                                N(IBV_QP_ALT_PATH),
                                N(IBV_QP_MIN_RNR_TIMER),
                                N(IBV_QP_SQ_PSN),
                                N(IBV_QP_MAX_DEST_RD_ATOMIC),
                                N(IBV_QP_PATH_MIG_STATE),
                                N(IBV_QP_CAP),
                                N(IBV_QP_DEST_QPN),
                                N(IBV_QP_RATE_LIMIT)};
constexpr Name kSendFlags[] = {N(IBV_SEND_FENCE), N(IBV_SEND_SIGNALED), N(IBV_SEND_SOLICITED),
                               N(IBV_SEND_INLINE), N(IBV_SEND_IP_CSUM)};
constexpr Name kWcFlags[] = {N(IBV_WC_GRH),          N(IBV_WC_WITH_IMM),    N(IBV_WC_IP_CSUM_OK),
                             N(IBV_WC_WITH_INV),     N(IBV_WC_TM_SYNC_REQ), N(IBV_WC_TM_MATCH),
                             N(IBV_WC_TM_DATA_VALID)};
#undef N

std::string number(uint32_t value, const char* format) {
    char buf[16];
    std::snprintf(buf, sizeof buf, format, value);
    return buf;
}

std::string lookup(std::span<const Name> table, uint32_t value) {
    for (const Name& n : table)
        if (n.value == value) return n.name;
    return number(value, "%u");
}

// The names of the bits set, joined by '|'; bits without a name as one hex number at the end.
std::string flags(std::span<const Name> table, uint32_t value) {
    if (value == 0) return "0";
    std::string out;
    uint32_t rest = value;
    for (const Name& n : table) {
        if ((value & n.value) != n.value) continue;
        if (!out.empty()) out += '|';
        out += n.name;
        rest &= ~n.value;
    }
    if (rest) out += (out.empty() ? "" : "|") + number(rest, "0x%x");
    return out;
}

// "IBV_QPT_RC" without "IBV_QPT_".
std::string without_prefix(const std::string& name, std::string_view prefix) {
    return name.starts_with(prefix) ? name.substr(prefix.size()) : name;
}

} // namespace

std::string qp_type(uint32_t v) {
    return lookup(kQpTypes, v);
}
std::string qp_state(uint32_t v) {
    return lookup(kQpStates, v);
}
std::string mtu(uint32_t v) {
    return lookup(kMtus, v);
}
std::string wr_opcode(uint32_t v) {
    const char* name = wr_opcode_info(v).name; // the WR table names its opcodes
    return name ? name : number(v, "%u");
}
std::string wc_opcode(uint32_t v) {
    return lookup(kWcOpcodes, v);
}
std::string wc_status(uint32_t v) {
    return lookup(kWcStatuses, v);
}
std::string event_type(uint32_t v) {
    return lookup(kEvents, v);
}
std::string access_flags(uint32_t v) {
    return flags(kAccessFlags, v);
}
std::string qp_attr_mask(uint32_t v) {
    return flags(kQpAttrMask, v);
}
std::string send_flags(uint32_t v) {
    return flags(kSendFlags, v);
}
std::string wc_flags(uint32_t v) {
    return flags(kWcFlags, v);
}
std::string qp_type_short(uint32_t v) {
    return without_prefix(qp_type(v), "IBV_QPT_");
}
std::string qp_state_short(uint32_t v) {
    return without_prefix(qp_state(v), "IBV_QPS_");
}

} // namespace emu::names
