#include "emu/qp_state_rules.h"

#include "emu/verbs_names.h"

#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <string>
#include <vector>

using emu::modify_is_ok;
using emu::transition_rule;

namespace {

// The expectations below are written out per QP type from the IBA QP attribute tables as
// Linux applies them (ib_modify_qp_is_ok), one transition a line, without sharing anything
// with the implementation's table.
struct Expected {
    ibv_qp_state from;
    ibv_qp_state to;
    uint32_t required;
    uint32_t optional;
};

constexpr ibv_qp_state RESET = IBV_QPS_RESET, INIT = IBV_QPS_INIT, RTR = IBV_QPS_RTR,
                       RTS = IBV_QPS_RTS, SQD = IBV_QPS_SQD, SQE = IBV_QPS_SQE, ERR = IBV_QPS_ERR;
constexpr ibv_qp_state kAllStates[] = {RESET, INIT, RTR, RTS, SQD, SQE, ERR};

// Every attribute bit libibverbs defines.
constexpr uint32_t kAttrs[] = {
    IBV_QP_CUR_STATE,
    IBV_QP_EN_SQD_ASYNC_NOTIFY,
    IBV_QP_ACCESS_FLAGS,
    IBV_QP_PKEY_INDEX,
    IBV_QP_PORT,
    IBV_QP_QKEY,
    IBV_QP_AV,
    IBV_QP_PATH_MTU,
    IBV_QP_TIMEOUT,
    IBV_QP_RETRY_CNT,
    IBV_QP_RNR_RETRY,
    IBV_QP_RQ_PSN,
    IBV_QP_MAX_QP_RD_ATOMIC,
    IBV_QP_ALT_PATH,
    IBV_QP_MIN_RNR_TIMER,
    IBV_QP_SQ_PSN,
    IBV_QP_MAX_DEST_RD_ATOMIC,
    IBV_QP_PATH_MIG_STATE,
    IBV_QP_CAP,
    IBV_QP_DEST_QPN,
    IBV_QP_RATE_LIMIT,
};

// Transitions every type has with no attributes: to Reset from anywhere, to Error from
// anywhere but Reset.
void add_reset_and_error(std::vector<Expected>& v) {
    for (ibv_qp_state s : kAllStates) {
        v.push_back({s, RESET, 0, 0});
        if (s != RESET) v.push_back({s, ERR, 0, 0});
    }
}

std::vector<Expected> rc_expected() {
    std::vector<Expected> v = {
        {RESET, INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
        {INIT, INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
        {INIT, RTR,
         IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
             IBV_QP_MIN_RNR_TIMER,
         IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
        {RTR, RTS,
         IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
             IBV_QP_MAX_QP_RD_ATOMIC,
         IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
             IBV_QP_PATH_MIG_STATE},
        {RTS, RTS, 0,
         IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
             IBV_QP_MIN_RNR_TIMER},
        {RTS, SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
        {SQD, RTS, 0,
         IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
             IBV_QP_PATH_MIG_STATE},
        {SQD, SQD, 0,
         IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
             IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ALT_PATH |
             IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER |
             IBV_QP_PATH_MIG_STATE},
        // RC never enters SQE, but the table lets it leave with no attributes.
        {SQE, RTS, 0, 0},
    };
    add_reset_and_error(v);
    return v;
}

std::vector<Expected> uc_expected() {
    std::vector<Expected> v = {
        {RESET, INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
        {INIT, INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
        {INIT, RTR, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
         IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
        {RTR, RTS, IBV_QP_SQ_PSN,
         IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE},
        {RTS, RTS, 0,
         IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE},
        {RTS, SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
        {SQD, RTS, 0,
         IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE},
        {SQD, SQD, 0,
         IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
             IBV_QP_PATH_MIG_STATE},
        {SQE, RTS, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS},
    };
    add_reset_and_error(v);
    return v;
}

std::vector<Expected> ud_expected() {
    std::vector<Expected> v = {
        {RESET, INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0},
        {INIT, INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY},
        {INIT, RTR, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
        {RTR, RTS, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY},
        {RTS, RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
        {RTS, SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
        {SQD, RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
        {SQD, SQD, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
        {SQE, RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    };
    add_reset_and_error(v);
    return v;
}

struct TypeCase {
    ibv_qp_type type;
    const char* name;
    std::vector<Expected> legal;
};

std::vector<TypeCase> type_cases() {
    return {{IBV_QPT_RC, "RC", rc_expected()},
            {IBV_QPT_UC, "UC", uc_expected()},
            {IBV_QPT_UD, "UD", ud_expected()}};
}

const Expected* find(const std::vector<Expected>& v, ibv_qp_state from, ibv_qp_state to) {
    for (const auto& e : v)
        if (e.from == from && e.to == to) return &e;
    return nullptr;
}

std::string label(const char* type, ibv_qp_state from, ibv_qp_state to) {
    return std::string(type) + " " + emu::names::qp_state_short(from) + "->" +
           emu::names::qp_state_short(to);
}

} // namespace

TEST_CASE("qp rules: every legal transition accepts exactly its required mask", "[qp]") {
    for (const auto& tc : type_cases()) {
        for (const auto& e : tc.legal) {
            INFO(label(tc.name, e.from, e.to));
            auto rule = transition_rule(tc.type, e.from, e.to);
            REQUIRE(rule.valid);
            CHECK(rule.required == e.required);
            CHECK(rule.optional == e.optional);
            CHECK(modify_is_ok(tc.type, e.from, e.to, IBV_QP_STATE | e.required));
            // Staying in the same state needs no IBV_QP_STATE.
            if (e.from == e.to) CHECK(modify_is_ok(tc.type, e.from, e.to, e.required));
        }
    }
}

TEST_CASE("qp rules: dropping any required attribute fails", "[qp]") {
    for (const auto& tc : type_cases()) {
        for (const auto& e : tc.legal) {
            for (uint32_t bit : kAttrs) {
                if ((e.required & bit) == 0) continue;
                INFO(label(tc.name, e.from, e.to) << " without bit 0x" << std::hex << bit);
                CHECK_FALSE(modify_is_ok(tc.type, e.from, e.to,
                                         (IBV_QP_STATE | e.required | e.optional) & ~bit));
            }
        }
    }
}

TEST_CASE("qp rules: optional attributes may be added, all others fail", "[qp]") {
    for (const auto& tc : type_cases()) {
        for (const auto& e : tc.legal) {
            const uint32_t base = IBV_QP_STATE | e.required;
            CHECK(modify_is_ok(tc.type, e.from, e.to, base | e.optional));
            for (uint32_t bit : kAttrs) {
                if ((e.required & bit) != 0) continue;
                INFO(label(tc.name, e.from, e.to) << " with bit 0x" << std::hex << bit);
                bool optional = (e.optional & bit) != 0;
                CHECK(modify_is_ok(tc.type, e.from, e.to, base | bit) == optional);
            }
            // Bits libibverbs does not define are never accepted.
            for (int b = 21; b < 32; ++b) {
                if ((1u << b) == IBV_QP_RATE_LIMIT) continue;
                INFO(label(tc.name, e.from, e.to) << " with undefined bit " << b);
                CHECK_FALSE(modify_is_ok(tc.type, e.from, e.to, base | (1u << b)));
            }
        }
    }
}

TEST_CASE("qp rules: every other transition is illegal", "[qp]") {
    for (const auto& tc : type_cases()) {
        for (ibv_qp_state from : kAllStates) {
            for (ibv_qp_state to : kAllStates) {
                if (find(tc.legal, from, to) != nullptr) continue;
                INFO(label(tc.name, from, to));
                CHECK_FALSE(transition_rule(tc.type, from, to).valid);
                CHECK_FALSE(modify_is_ok(tc.type, from, to, IBV_QP_STATE));
                // Not even with every attribute given.
                uint32_t all = IBV_QP_STATE;
                for (uint32_t bit : kAttrs)
                    all |= bit;
                CHECK_FALSE(modify_is_ok(tc.type, from, to, all));
            }
        }
    }
}

TEST_CASE("qp rules: well-known illegal transitions", "[qp]") {
    const uint32_t rc_rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    const uint32_t rc_rts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                            IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RESET, RTR, rc_rtr)); // Skipping INIT.
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RESET, RTS, rc_rts));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, INIT, RTS, rc_rts)); // Skipping RTR.
    CHECK_FALSE(modify_is_ok(IBV_QPT_UD, INIT, RTS, IBV_QP_STATE | IBV_QP_SQ_PSN));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RTS, RTR, IBV_QP_STATE)); // No way back.
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RTR, INIT, IBV_QP_STATE));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, ERR, RTS, IBV_QP_STATE)); // Error only to Reset.
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, ERR, INIT, IBV_QP_STATE));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RTR, SQD, IBV_QP_STATE)); // Drain only from RTS.
    CHECK_FALSE(modify_is_ok(IBV_QPT_UD, RTS, SQE, IBV_QP_STATE)); // SQE is entered by
                                                                   // the QP, not by a verb.
    // The kernel has no Reset->Error entry.
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RESET, ERR, IBV_QP_STATE));
    // Changing attributes without a state change is only allowed where X->X is legal.
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RTR, RTR, IBV_QP_ACCESS_FLAGS));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RESET, RESET, IBV_QP_PORT));
}

TEST_CASE("qp rules: the connection sequences applications use", "[qp]") {
    // ibv_rc_pingpong / perftest masks.
    SECTION("RC") {
        CHECK(modify_is_ok(IBV_QPT_RC, RESET, INIT,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
        CHECK(modify_is_ok(IBV_QPT_RC, INIT, RTR,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
        CHECK(modify_is_ok(IBV_QPT_RC, RTR, RTS,
                           IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                               IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC));
        // Frequent mistakes, all EINVAL on Linux.
        CHECK_FALSE(modify_is_ok(IBV_QPT_RC, INIT, RTR,
                                 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN |
                                     IBV_QP_MAX_DEST_RD_ATOMIC)); // No MIN_RNR_TIMER.
        CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RESET, INIT,
                                 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                     IBV_QP_QKEY)); // Q_Key is for UD.
        CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RTS, RTS,
                                 IBV_QP_STATE | IBV_QP_CAP)); // No resize through modify.
    }
    SECTION("UC") {
        CHECK(modify_is_ok(IBV_QPT_UC, RESET, INIT,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
        CHECK(modify_is_ok(IBV_QPT_UC, INIT, RTR,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                               IBV_QP_RQ_PSN));
        CHECK(modify_is_ok(IBV_QPT_UC, RTR, RTS, IBV_QP_STATE | IBV_QP_SQ_PSN));
        // UC has no reads or atomics, hence no RD atomic depth and no RNR timer.
        CHECK_FALSE(modify_is_ok(IBV_QPT_UC, INIT, RTR,
                                 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                     IBV_QP_MIN_RNR_TIMER));
        CHECK_FALSE(modify_is_ok(IBV_QPT_UC, RTR, RTS,
                                 IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                     IBV_QP_RNR_RETRY));
    }
    SECTION("UD") {
        CHECK(modify_is_ok(IBV_QPT_UD, RESET, INIT,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY));
        CHECK(modify_is_ok(IBV_QPT_UD, INIT, RTR, IBV_QP_STATE));
        CHECK(modify_is_ok(IBV_QPT_UD, RTR, RTS, IBV_QP_STATE | IBV_QP_SQ_PSN));
        // The classic UD mistake: access flags belong to connected QPs.
        CHECK_FALSE(modify_is_ok(IBV_QPT_UD, RESET, INIT,
                                 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
                                     IBV_QP_ACCESS_FLAGS));
        // No peer for UD: the address comes with each work request.
        CHECK_FALSE(
            modify_is_ok(IBV_QPT_UD, INIT, RTR, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN));
    }
}

TEST_CASE("qp rules: IBV_QP_CUR_STATE only from RTR, RTS, SQD or SQE", "[qp]") {
    const uint32_t cur = IBV_QP_STATE | IBV_QP_CUR_STATE;
    CHECK(modify_is_ok(IBV_QPT_UD, RTR, RTS, cur | IBV_QP_SQ_PSN));
    CHECK(modify_is_ok(IBV_QPT_RC, RTS, RTS, cur));
    CHECK(modify_is_ok(IBV_QPT_RC, RTS, RTS, IBV_QP_CUR_STATE)); // Without a state change.
    CHECK(modify_is_ok(IBV_QPT_UC, SQD, RTS, cur));
    CHECK(modify_is_ok(IBV_QPT_UD, SQE, RTS, cur));
    CHECK(modify_is_ok(IBV_QPT_UC, SQE, RTS, cur));

    for (auto type : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD}) {
        INFO("type " << type);
        CHECK_FALSE(modify_is_ok(type, RESET, RESET, cur));
        CHECK_FALSE(
            modify_is_ok(type, RESET, INIT, cur | transition_rule(type, RESET, INIT).required));
        CHECK_FALSE(modify_is_ok(type, INIT, INIT, IBV_QP_CUR_STATE));
        CHECK_FALSE(modify_is_ok(type, INIT, RTR, cur | transition_rule(type, INIT, RTR).required));
        CHECK_FALSE(modify_is_ok(type, ERR, RESET, cur));
        // Allowed current state, but the transition takes no attributes at all.
        CHECK_FALSE(modify_is_ok(type, RTS, ERR, cur));
        CHECK_FALSE(modify_is_ok(type, RTS, SQD, cur));
    }
    // RC/XRC never sit in SQE, so SQE->RTS takes nothing for them, not even CUR_STATE.
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, SQE, RTS, cur));
    CHECK(modify_is_ok(IBV_QPT_RC, SQE, RTS, IBV_QP_STATE));
}

TEST_CASE("qp rules: any state may go to RESET, any but RESET to ERR", "[qp]") {
    for (auto type : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND,
                      IBV_QPT_XRC_RECV}) {
        for (ibv_qp_state s : kAllStates) {
            INFO("type " << type << " from " << emu::names::qp_state_short(s));
            CHECK(modify_is_ok(type, s, RESET, IBV_QP_STATE));
            CHECK(modify_is_ok(type, s, ERR, IBV_QP_STATE) == (s != RESET));
            // These transitions take no attributes.
            CHECK_FALSE(modify_is_ok(type, s, RESET, IBV_QP_STATE | IBV_QP_PORT));
            if (s != RESET)
                CHECK_FALSE(modify_is_ok(type, s, ERR, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS));
        }
    }
}

TEST_CASE("qp rules: XRC initiator and target", "[qp]") {
    const uint32_t init = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    const uint32_t rtr_remote =
        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    const uint32_t rtr_responder = rtr_remote | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    const uint32_t rts_requester = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

    // The initiator only sends: peer address like UC at RTR, requester attributes like RC.
    CHECK(modify_is_ok(IBV_QPT_XRC_SEND, RESET, INIT, init));
    CHECK(modify_is_ok(IBV_QPT_XRC_SEND, INIT, RTR, rtr_remote));
    CHECK_FALSE(modify_is_ok(IBV_QPT_XRC_SEND, INIT, RTR, rtr_responder));
    CHECK(modify_is_ok(IBV_QPT_XRC_SEND, RTR, RTS, rts_requester));
    CHECK_FALSE(modify_is_ok(IBV_QPT_XRC_SEND, RTR, RTS, IBV_QP_STATE | IBV_QP_SQ_PSN));

    // The target only responds: responder attributes at RTR, just timeout and PSN at RTS.
    CHECK(modify_is_ok(IBV_QPT_XRC_RECV, RESET, INIT, init));
    CHECK(modify_is_ok(IBV_QPT_XRC_RECV, INIT, RTR, rtr_responder));
    CHECK_FALSE(modify_is_ok(IBV_QPT_XRC_RECV, INIT, RTR, rtr_remote));
    CHECK(modify_is_ok(IBV_QPT_XRC_RECV, RTR, RTS, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN));
    CHECK_FALSE(modify_is_ok(IBV_QPT_XRC_RECV, RTR, RTS, rts_requester));
    CHECK_FALSE(modify_is_ok(IBV_QPT_XRC_RECV, RTR, RTS, IBV_QP_STATE | IBV_QP_SQ_PSN));
}

TEST_CASE("qp rules: raw packet QPs", "[qp]") {
    CHECK(modify_is_ok(IBV_QPT_RAW_PACKET, RESET, INIT, IBV_QP_STATE | IBV_QP_PORT));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RAW_PACKET, RESET, INIT, IBV_QP_STATE));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RAW_PACKET, RESET, INIT,
                             IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX));
    CHECK(modify_is_ok(IBV_QPT_RAW_PACKET, INIT, RTR, IBV_QP_STATE));
    CHECK(modify_is_ok(IBV_QPT_RAW_PACKET, RTR, RTS, IBV_QP_STATE));
    // Only raw packet QPs take a rate limit, on the way to RTS and in RTS.
    CHECK(modify_is_ok(IBV_QPT_RAW_PACKET, RTR, RTS, IBV_QP_STATE | IBV_QP_RATE_LIMIT));
    CHECK(modify_is_ok(IBV_QPT_RAW_PACKET, RTS, RTS, IBV_QP_RATE_LIMIT));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RTS, RTS, IBV_QP_RATE_LIMIT));
    CHECK_FALSE(modify_is_ok(IBV_QPT_UD, RTS, RTS, IBV_QP_RATE_LIMIT));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RAW_PACKET, INIT, INIT, IBV_QP_PORT));
    CHECK_FALSE(
        modify_is_ok(IBV_QPT_RAW_PACKET, RTS, SQD, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY));
    CHECK(modify_is_ok(IBV_QPT_RAW_PACKET, RTS, SQD, IBV_QP_STATE));
}

TEST_CASE("qp rules: unknown types and states are rejected", "[qp]") {
    // Only values inside each enum's range: anything else is undefined to cast to it, so
    // callers range-check wire values first.
    const auto bad_type = static_cast<ibv_qp_type>(5);
    const auto bad_state = IBV_QPS_UNKNOWN;
    CHECK_FALSE(transition_rule(IBV_QPT_DRIVER, RESET, INIT).valid);
    CHECK_FALSE(transition_rule(bad_type, RESET, RESET).valid);
    CHECK_FALSE(modify_is_ok(bad_type, RESET, RESET, 0));
    CHECK_FALSE(modify_is_ok(IBV_QPT_DRIVER, RTS, RESET, IBV_QP_STATE));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, bad_state, RESET, IBV_QP_STATE));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, bad_state, ERR, IBV_QP_STATE));
    CHECK_FALSE(modify_is_ok(IBV_QPT_RC, RTS, bad_state, IBV_QP_STATE));
    CHECK_FALSE(transition_rule(IBV_QPT_RC, bad_state, bad_state).valid);
}
