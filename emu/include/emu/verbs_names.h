// The verbs enums and flag sets by the names <infiniband/verbs.h> gives them (IBV_QPT_RC,
// IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_REMOTE_WRITE): what the verbs trace, the NIC's log and the
// explanations of failures print, so that a reader can look each one up in verbs.h. A value
// the table does not know shows as its number.
#pragma once

#include <cstdint>
#include <string>

namespace emu::names {

std::string qp_type(uint32_t type);       // IBV_QPT_RC
std::string qp_state(uint32_t state);     // IBV_QPS_INIT
std::string mtu(uint32_t mtu);            // IBV_MTU_1024
std::string wr_opcode(uint32_t opcode);   // IBV_WR_RDMA_WRITE
std::string wc_opcode(uint32_t opcode);   // IBV_WC_RECV
std::string wc_status(uint32_t status);   // IBV_WC_REM_ACCESS_ERR
std::string event_type(uint32_t event);   // IBV_EVENT_QP_ACCESS_ERR
std::string access_flags(uint32_t flags); // IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_REMOTE_READ, or 0
std::string qp_attr_mask(uint32_t mask);  // IBV_QP_STATE|IBV_QP_AV|...
std::string send_flags(uint32_t flags);   // IBV_SEND_SIGNALED|IBV_SEND_INLINE
std::string wc_flags(uint32_t flags);     // IBV_WC_GRH|IBV_WC_WITH_IMM

// The short forms used in sentences: "RC" for IBV_QPT_RC, "INIT" for IBV_QPS_INIT.
std::string qp_type_short(uint32_t type);
std::string qp_state_short(uint32_t state);

} // namespace emu::names
