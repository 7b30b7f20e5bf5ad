// ibv_modify_qp: the state machine and attribute masks (emu/qp_state_rules.h), then the value
// checks the kernel and rxe make (rxe_qp_chk_attr), then the change itself.
#include "address_vector.h"
#include "emu/access_flags.h"
#include "emu/qp_state_rules.h"
#include "emu/verbs_names.h"
#include "nic/device_limits.h"
#include "verbs.h"

#include <spdlog/fmt/fmt.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace nicsim {

namespace {

constexpr uint32_t kPsnMask = 0xffffff;

// The value of an enum field as the client sent it. Every byte is untrusted: loading an
// out-of-range value as the enum type would be undefined behaviour.
template <typename E> uint32_t raw(const E& field) {
    static_assert(sizeof(E) == sizeof(uint32_t));
    uint32_t v;
    std::memcpy(&v, &field, sizeof v);
    return v;
}

bool valid_mtu(uint32_t mtu) {
    return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096;
}

// Why the attribute values are refused (EINVAL), empty when they are fine.
std::string value_fault(const Device& dev, const ibv_qp_attr& a, uint32_t mask) {
    if ((mask & IBV_QP_PORT) && a.port_num != 1)
        return fmt::format("port_num {}: {} has port 1 only", a.port_num, dev.name());
    if ((mask & IBV_QP_PKEY_INDEX) && a.pkey_index >= limits::kPkeyTableLen)
        return fmt::format("pkey_index {}: the P_Key table has {} entry (index 0)", a.pkey_index,
                           limits::kPkeyTableLen);
    if (mask & IBV_QP_PATH_MTU) {
        if (!valid_mtu(raw(a.path_mtu)))
            return fmt::format("path_mtu {} is not an enum ibv_mtu (IBV_MTU_256 .. IBV_MTU_4096)",
                               raw(a.path_mtu));
        if (raw(a.path_mtu) > raw(dev.port_attr().max_mtu))
            return fmt::format("path_mtu {} exceeds the port's max_mtu {}",
                               emu::names::mtu(raw(a.path_mtu)),
                               emu::names::mtu(raw(dev.port_attr().max_mtu)));
    }
    if ((mask & IBV_QP_PATH_MIG_STATE) && raw(a.path_mig_state) > IBV_MIG_ARMED)
        return fmt::format("path_mig_state {} is not an enum ibv_mig_state", raw(a.path_mig_state));
    if (mask & IBV_QP_AV)
        if (std::string why = address_vector_fault(dev, a.ah_attr, "ah_attr"); !why.empty())
            return why;
    if (mask & IBV_QP_ALT_PATH) {
        if (a.alt_port_num != 1)
            return fmt::format("alt_port_num {}: {} has port 1 only", a.alt_port_num, dev.name());
        if (a.alt_pkey_index >= limits::kPkeyTableLen)
            return fmt::format("alt_pkey_index {}: the P_Key table has {} entry (index 0)",
                               a.alt_pkey_index, limits::kPkeyTableLen);
        if (std::string why = address_vector_fault(dev, a.alt_ah_attr, "alt_ah_attr"); !why.empty())
            return why;
    }
    if ((mask & IBV_QP_ACCESS_FLAGS) && emu::check_qp_access(a.qp_access_flags))
        return "qp_access_flags " + emu::names::access_flags(a.qp_access_flags) + " refused";
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.max_rd_atomic > limits::kMaxQpRdAtom)
        return fmt::format("max_rd_atomic {} exceeds the device's max_qp_init_rd_atom {}",
                           a.max_rd_atomic, limits::kMaxQpRdAtom);
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a.max_dest_rd_atomic > limits::kMaxQpRdAtom)
        return fmt::format("max_dest_rd_atomic {} exceeds the device's max_qp_rd_atom {}",
                           a.max_dest_rd_atomic, limits::kMaxQpRdAtom);
    // Field widths of the wire and the IBA attributes.
    struct Width {
        uint32_t bit;
        const char* name;
        uint32_t value, max;
    };
    const Width widths[] = {
        {IBV_QP_TIMEOUT, "timeout", a.timeout, 31},
        {IBV_QP_RETRY_CNT, "retry_cnt", a.retry_cnt, 7},
        {IBV_QP_RNR_RETRY, "rnr_retry", a.rnr_retry, 7},
        {IBV_QP_MIN_RNR_TIMER, "min_rnr_timer", a.min_rnr_timer, 31},
        {IBV_QP_DEST_QPN, "dest_qp_num", a.dest_qp_num, kPsnMask},
    };
    for (const Width& w : widths)
        if ((mask & w.bit) && w.value > w.max)
            return fmt::format("{} {} does not fit its field (0..{})", w.name, w.value, w.max);
    return {};
}

void apply(Qp& qp, const ibv_qp_attr& a, uint32_t mask, ibv_qp_state next) {
    ibv_qp_attr& s = qp.attr;
    if (next == IBV_QPS_RESET) {
        // Back to RESET: the QP forgets its connection, as after create.
        ibv_qp_attr fresh{};
        fresh.path_mtu = IBV_MTU_1024;
        fresh.port_num = 1;
        s = fresh;
    }
    if (mask & IBV_QP_PKEY_INDEX) s.pkey_index = a.pkey_index;
    if (mask & IBV_QP_PORT) s.port_num = a.port_num;
    if (mask & IBV_QP_QKEY) s.qkey = a.qkey;
    if (mask & IBV_QP_ACCESS_FLAGS) s.qp_access_flags = a.qp_access_flags;
    if (mask & IBV_QP_AV) s.ah_attr = a.ah_attr;
    if (mask & IBV_QP_ALT_PATH) {
        s.alt_ah_attr = a.alt_ah_attr;
        s.alt_port_num = a.alt_port_num;
        s.alt_pkey_index = a.alt_pkey_index;
        s.alt_timeout = a.alt_timeout;
    }
    if (mask & IBV_QP_PATH_MTU) s.path_mtu = a.path_mtu;
    if (mask & IBV_QP_DEST_QPN) s.dest_qp_num = a.dest_qp_num;
    if (mask & IBV_QP_RQ_PSN) s.rq_psn = a.rq_psn & kPsnMask;
    if (mask & IBV_QP_SQ_PSN) s.sq_psn = a.sq_psn & kPsnMask;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) s.max_dest_rd_atomic = a.max_dest_rd_atomic;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC) s.max_rd_atomic = a.max_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER) s.min_rnr_timer = a.min_rnr_timer;
    if (mask & IBV_QP_TIMEOUT) s.timeout = a.timeout;
    if (mask & IBV_QP_RETRY_CNT) s.retry_cnt = a.retry_cnt;
    if (mask & IBV_QP_RNR_RETRY) s.rnr_retry = a.rnr_retry;
    if (mask & IBV_QP_PATH_MIG_STATE) s.path_mig_state = a.path_mig_state;
    if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) s.en_sqd_async_notify = a.en_sqd_async_notify;
    s.qp_state = next;
    s.cur_qp_state = next;
}

} // namespace

int modify_qp(VerbContext& c, const ipc::ModifyQpReq& q, ipc::Empty&) {
    Qp* qp = find_qp(c.objects, q.qp);
    if (!qp) return c.refuse(EINVAL, fmt::format("qp handle {} names no QP of this context", q.qp));
    if (qp->ind_table) // an RSS QP has no queues of its own to change
        return c.refuse(EOPNOTSUPP, "an RSS QP has no queues of its own to modify", qp->qpn);
    const ibv_qp_attr& a = q.attr;
    // As rxe: a caller-supplied current state stands in for the QP's own.
    uint32_t raw_cur = (q.mask & IBV_QP_CUR_STATE) ? raw(a.cur_qp_state) : raw(qp->attr.qp_state);
    uint32_t raw_next = (q.mask & IBV_QP_STATE) ? raw(a.qp_state) : raw_cur;
    if (raw_cur > IBV_QPS_ERR || raw_next > IBV_QPS_ERR)
        return c.refuse(EINVAL,
                        fmt::format("{} {} is not an enum ibv_qp_state",
                                    raw_cur > IBV_QPS_ERR ? "cur_qp_state" : "qp_state",
                                    raw_cur > IBV_QPS_ERR ? raw_cur : raw_next),
                        qp->qpn);
    auto cur = static_cast<ibv_qp_state>(raw_cur);
    auto next = static_cast<ibv_qp_state>(raw_next);
    if (std::string why = emu::modify_refusal(qp->type, cur, next, q.mask); !why.empty())
        return c.refuse(EINVAL, why, qp->qpn);
    if (std::string why = value_fault(c.nic.device(), a, q.mask); !why.empty())
        return c.refuse(EINVAL, why, qp->qpn);
    // The transition is checked from `cur`; the data path learns the state the QP really left.
    const ibv_qp_state was = qp->attr.qp_state;
    apply(*qp, a, q.mask, next);
    if (DataPath* dp = c.nic.data_path()) dp->qp_modified(*qp, was);
    c.log.debug("{} qp {:#x} {} -> {} ({})", c.prefix, qp->qpn, emu::names::qp_state_short(cur),
                emu::names::qp_state_short(next), emu::names::qp_attr_mask(q.mask));
    return 0;
}

} // namespace nicsim
