#include "emu/qp_state_rules.h"
#include "emu/verbs_names.h"

#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

namespace names = emu::names;

TEST_CASE("verbs enums print as verbs.h names them, unknown values as numbers") {
    CHECK(names::qp_type(IBV_QPT_RC) == "IBV_QPT_RC");
    CHECK(names::qp_type(IBV_QPT_XRC_RECV) == "IBV_QPT_XRC_RECV");
    CHECK(names::qp_type(77) == "77");
    CHECK(names::qp_type_short(IBV_QPT_UD) == "UD");
    CHECK(names::qp_state(IBV_QPS_RTS) == "IBV_QPS_RTS");
    CHECK(names::qp_state_short(IBV_QPS_RTR) == "RTR");
    CHECK(names::qp_state(42) == "42");
    CHECK(names::mtu(IBV_MTU_4096) == "IBV_MTU_4096");
    CHECK(names::wr_opcode(IBV_WR_ATOMIC_FETCH_AND_ADD) == "IBV_WR_ATOMIC_FETCH_AND_ADD");
    CHECK(names::wc_opcode(IBV_WC_RECV_RDMA_WITH_IMM) == "IBV_WC_RECV_RDMA_WITH_IMM");
    CHECK(names::wc_status(IBV_WC_REM_ACCESS_ERR) == "IBV_WC_REM_ACCESS_ERR");
    CHECK(names::wc_status(IBV_WC_TM_RNDV_INCOMPLETE) == "IBV_WC_TM_RNDV_INCOMPLETE");
    CHECK(names::event_type(IBV_EVENT_QP_ACCESS_ERR) == "IBV_EVENT_QP_ACCESS_ERR");
    CHECK(names::event_type(IBV_EVENT_WQ_FATAL) == "IBV_EVENT_WQ_FATAL");
}

TEST_CASE("flag sets print as their names joined by |, unknown bits as one hex number") {
    CHECK(names::access_flags(0) == "0");
    CHECK(names::access_flags(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ) ==
          "IBV_ACCESS_LOCAL_WRITE|IBV_ACCESS_REMOTE_READ");
    CHECK(names::access_flags(IBV_ACCESS_REMOTE_ATOMIC | 0x10000000) ==
          "IBV_ACCESS_REMOTE_ATOMIC|0x10000000");
    CHECK(names::qp_attr_mask(IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN) ==
          "IBV_QP_STATE|IBV_QP_AV|IBV_QP_DEST_QPN");
    CHECK(names::qp_attr_mask(1u << 21) == "0x200000");
    CHECK(names::send_flags(IBV_SEND_SIGNALED | IBV_SEND_INLINE) ==
          "IBV_SEND_SIGNALED|IBV_SEND_INLINE");
    CHECK(names::wc_flags(IBV_WC_GRH | IBV_WC_WITH_IMM) == "IBV_WC_GRH|IBV_WC_WITH_IMM");
}

TEST_CASE("a refused ibv_modify_qp names the missing or disallowed attributes and the rule") {
    const uint32_t rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    CHECK(emu::modify_refusal(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, rtr).empty());
    CHECK(emu::modify_refusal(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, rtr & ~IBV_QP_DEST_QPN) ==
          "IBV_QP_DEST_QPN missing for INIT->RTR on RC");
    CHECK(emu::modify_refusal(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR,
                              rtr & ~(IBV_QP_RQ_PSN | IBV_QP_AV)) ==
          "IBV_QP_AV|IBV_QP_RQ_PSN missing for INIT->RTR on RC");
    CHECK(emu::modify_refusal(IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_SQ_PSN) ==
          "IBV_QP_SQ_PSN not allowed for INIT->RTR on UC");
    CHECK(
        emu::modify_refusal(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_QKEY) ==
        "IBV_QP_ACCESS_FLAGS|IBV_QP_PKEY_INDEX|IBV_QP_PORT missing and IBV_QP_QKEY not allowed "
        "for RESET->INIT on RC");
    CHECK(emu::modify_refusal(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_RTS, IBV_QP_STATE) ==
          "RESET->RTS is not a legal transition on RC (IBA 11.2.1: RESET->INIT->RTR->RTS; any "
          "state ->RESET, ->ERR)");
    CHECK(emu::modify_refusal(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_INIT,
                              IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS) ==
          "IBV_QP_CUR_STATE is allowed only from RTR, RTS, SQD or SQE, not from INIT");
}

TEST_CASE("QP states have their short names in sentences") {
    const char* const expected[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "UNKNOWN"};
    for (uint32_t state = IBV_QPS_RESET; state <= IBV_QPS_UNKNOWN; ++state)
        CHECK(names::qp_state_short(state) == expected[state]);
}
