#include "emu/qp_state_rules.h"

#include "emu/verbs_names.h"

#include <array>
#include <cstddef>

namespace emu {
namespace {

// The QP types this table knows, in the order of the per-type masks below. SMI/GSI (QP0/QP1)
// have no libibverbs type; XRC_SEND/XRC_RECV are the kernel's XRC_INI/XRC_TGT.
enum Kind : size_t { kRc, kUc, kUd, kRaw, kXrcSend, kXrcRecv, kKinds };

bool kind_of(ibv_qp_type type, Kind* kind) {
    switch (type) {
    case IBV_QPT_RC:
        *kind = kRc;
        return true;
    case IBV_QPT_UC:
        *kind = kUc;
        return true;
    case IBV_QPT_UD:
        *kind = kUd;
        return true;
    case IBV_QPT_RAW_PACKET:
        *kind = kRaw;
        return true;
    case IBV_QPT_XRC_SEND:
        *kind = kXrcSend;
        return true;
    case IBV_QPT_XRC_RECV:
        *kind = kXrcRecv;
        return true;
    default:
        return false;
    }
}

constexpr size_t kStates = IBV_QPS_ERR + 1;

struct Cell {
    bool valid = false;
    std::array<uint32_t, kKinds> required{};
    std::array<uint32_t, kKinds> optional{};
};
using Table = std::array<std::array<Cell, kStates>, kStates>;

// Attribute groups that recur across types.
constexpr uint32_t kPkey = IBV_QP_PKEY_INDEX;
constexpr uint32_t kPort = IBV_QP_PORT;
constexpr uint32_t kQkey = IBV_QP_QKEY;
constexpr uint32_t kAccess = IBV_QP_ACCESS_FLAGS;
constexpr uint32_t kCur = IBV_QP_CUR_STATE;
// Path migration attributes, connected types only.
constexpr uint32_t kApm = IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE;
// The responder's RNR NAK timer exists only where a receive side answers with ACKs.
constexpr uint32_t kRnrTimer = IBV_QP_MIN_RNR_TIMER;
// Remote side of a connection (UC and the XRC initiator need no more).
constexpr uint32_t kRemote = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
// Requester reliability and initiator depth (RC, XRC initiator).
constexpr uint32_t kRequester =
    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

// Sets the masks of one transition for the types listed; types left out keep 0/0.
struct Masks {
    uint32_t rc = 0, uc = 0, ud = 0, raw = 0, xrc_send = 0, xrc_recv = 0;
    constexpr std::array<uint32_t, kKinds> by_kind() const {
        std::array<uint32_t, kKinds> a{};
        a[kRc] = rc;
        a[kUc] = uc;
        a[kUd] = ud;
        a[kRaw] = raw;
        a[kXrcSend] = xrc_send;
        a[kXrcRecv] = xrc_recv;
        return a;
    }
};

constexpr void allow(Table& t, ibv_qp_state from, ibv_qp_state to, Masks required = {},
                     Masks optional = {}) {
    Cell& c = t[from][to];
    c.valid = true;
    c.required = required.by_kind();
    c.optional = optional.by_kind();
}

// IBA 11.2.1 / Linux ib_modify_qp_is_ok (qp_state_table, drivers/infiniband/core/verbs.c).
constexpr Table build_table() {
    Table t{};

    // Modify QP may move any QP to Reset, and to Error from any state but Reset: the kernel
    // has no Reset->Error entry, so ibv_modify_qp(RESET->ERR) fails with EINVAL there.
    for (size_t s = 0; s < kStates; ++s) {
        auto from = static_cast<ibv_qp_state>(s);
        allow(t, from, IBV_QPS_RESET);
        if (from != IBV_QPS_RESET) allow(t, from, IBV_QPS_ERR);
    }

    // Reset->Init: the port and P_Key (Q_Key for UD), remote access rights where a
    // responder exists. Raw packet QPs only need the port.
    const uint32_t init_conn = kPkey | kPort | kAccess;
    const uint32_t init_ud = kPkey | kPort | kQkey;
    allow(t, IBV_QPS_RESET, IBV_QPS_INIT,
          {.rc = init_conn,
           .uc = init_conn,
           .ud = init_ud,
           .raw = kPort,
           .xrc_send = init_conn,
           .xrc_recv = init_conn});

    // Init->Init: the same attributes may be changed again; nothing is required.
    allow(t, IBV_QPS_INIT, IBV_QPS_INIT, {},
          {.rc = init_conn,
           .uc = init_conn,
           .ud = init_ud,
           .xrc_send = init_conn,
           .xrc_recv = init_conn});

    // Init->RTR: connected types learn their peer; those with a responder that answers reads
    // and atomics also set its depth and the RNR NAK timer.
    const uint32_t rtr_responder = kRemote | IBV_QP_MAX_DEST_RD_ATOMIC | kRnrTimer;
    const uint32_t rtr_opt = IBV_QP_ALT_PATH | kAccess | kPkey;
    allow(t, IBV_QPS_INIT, IBV_QPS_RTR,
          {.rc = rtr_responder, .uc = kRemote, .xrc_send = kRemote, .xrc_recv = rtr_responder},
          {.rc = rtr_opt,
           .uc = rtr_opt,
           .ud = kPkey | kQkey,
           .xrc_send = rtr_opt,
           .xrc_recv = rtr_opt});

    // RTR->RTS: every sending type needs its first PSN; RC and the XRC initiator also their
    // retry policy and read/atomic depth. The XRC target only sends responses: timeout and
    // PSN.
    allow(t, IBV_QPS_RTR, IBV_QPS_RTS,
          {.rc = kRequester,
           .uc = IBV_QP_SQ_PSN,
           .ud = IBV_QP_SQ_PSN,
           .xrc_send = kRequester,
           .xrc_recv = IBV_QP_TIMEOUT | IBV_QP_SQ_PSN},
          {.rc = kCur | kApm | kAccess | kRnrTimer,
           .uc = kCur | kApm | kAccess,
           .ud = kCur | kQkey,
           .raw = IBV_QP_RATE_LIMIT,
           .xrc_send = kCur | kApm | kAccess,
           .xrc_recv = kCur | kApm | kAccess | kRnrTimer});

    // RTS->RTS and SQD->RTS: nothing required; the attributes that may change while the QP
    // runs. (RTS->RTS also lets raw packet QPs change their rate limit.)
    const Masks running = {.rc = kCur | kApm | kAccess | kRnrTimer,
                           .uc = kCur | kApm | kAccess,
                           .ud = kCur | kQkey,
                           .xrc_send = kCur | kApm | kAccess,
                           .xrc_recv = kCur | kApm | kAccess | kRnrTimer};
    Masks rts_rts = running;
    rts_rts.raw = IBV_QP_RATE_LIMIT;
    allow(t, IBV_QPS_RTS, IBV_QPS_RTS, {}, rts_rts);
    allow(t, IBV_QPS_SQD, IBV_QPS_RTS, {}, running);

    // RTS->SQD: drain the send queue, optionally with the SQ drained async event.
    const uint32_t notify = IBV_QP_EN_SQD_ASYNC_NOTIFY;
    allow(t, IBV_QPS_RTS, IBV_QPS_SQD, {},
          {.rc = notify, .uc = notify, .ud = notify, .xrc_send = notify, .xrc_recv = notify});

    // SQD->SQD: with the send queue drained, the path and the connection parameters may be
    // changed. (The kernel lists no port change for UC here.)
    allow(t, IBV_QPS_SQD, IBV_QPS_SQD, {},
          {.rc = kPort | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | kApm | kAccess | kPkey |
                 kRnrTimer,
           .uc = IBV_QP_AV | kApm | kAccess | kPkey,
           .ud = kPkey | kQkey,
           .xrc_send = kPort | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                       IBV_QP_MAX_QP_RD_ATOMIC | kApm | kAccess | kPkey,
           .xrc_recv = kPort | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_MAX_DEST_RD_ATOMIC | kApm |
                       kAccess | kPkey | kRnrTimer});

    // SQE->RTS: the way out of Send Queue Error, which only unreliable types enter (a
    // reliable QP goes to Error instead), so RC/XRC have no attributes here.
    allow(t, IBV_QPS_SQE, IBV_QPS_RTS, {}, {.uc = kCur | kAccess, .ud = kCur | kQkey});

    return t;
}

constexpr Table kTable = build_table();

bool state_ok(ibv_qp_state s) {
    return static_cast<size_t>(s) < kStates;
}

} // namespace

TransitionRule transition_rule(ibv_qp_type type, ibv_qp_state from, ibv_qp_state to) {
    Kind kind;
    if (!kind_of(type, &kind) || !state_ok(from) || !state_ok(to)) return {false, 0, 0};
    const Cell& c = kTable[from][to];
    if (!c.valid) return {false, 0, 0};
    return {true, c.required[kind], c.optional[kind]};
}

bool modify_is_ok(ibv_qp_type type, ibv_qp_state current, ibv_qp_state next, uint32_t mask) {
    // IBV_QP_CUR_STATE names the state the consumer believes the QP is in; the kernel takes
    // it only from RTR, RTS, SQD or SQE, whatever the transition.
    if ((mask & IBV_QP_CUR_STATE) != 0 && current != IBV_QPS_RTR && current != IBV_QPS_RTS &&
        current != IBV_QPS_SQD && current != IBV_QPS_SQE)
        return false;
    TransitionRule rule = transition_rule(type, current, next);
    if (!rule.valid) return false;
    if ((mask & rule.required) != rule.required) return false;
    if ((mask & ~(rule.required | rule.optional | IBV_QP_STATE)) != 0) return false;
    return true;
}

std::string modify_refusal(ibv_qp_type type, ibv_qp_state current, ibv_qp_state next,
                           uint32_t mask) {
    if (modify_is_ok(type, current, next, mask)) return {};
    const std::string on = " on " + names::qp_type_short(type);
    const std::string transition =
        names::qp_state_short(current) + "->" + names::qp_state_short(next);
    if ((mask & IBV_QP_CUR_STATE) != 0 && current != IBV_QPS_RTR && current != IBV_QPS_RTS &&
        current != IBV_QPS_SQD && current != IBV_QPS_SQE)
        return std::string(
                   "IBV_QP_CUR_STATE is allowed only from RTR, RTS, SQD or SQE, not from ") +
               names::qp_state_short(current);
    TransitionRule rule = transition_rule(type, current, next);
    if (!rule.valid) {
        Kind kind;
        if (!kind_of(type, &kind)) return names::qp_type(type) + " QPs have no state machine here";
        return transition + " is not a legal transition" + on +
               " (IBA 11.2.1: RESET->INIT->RTR->RTS; any state ->RESET, ->ERR)";
    }
    std::string text;
    if (uint32_t missing = rule.required & ~mask) text = names::qp_attr_mask(missing) + " missing";
    if (uint32_t extra = mask & ~(rule.required | rule.optional | IBV_QP_STATE))
        text += (text.empty() ? "" : " and ") + names::qp_attr_mask(extra) + " not allowed";
    return text + " for " + transition + on;
}

} // namespace emu
