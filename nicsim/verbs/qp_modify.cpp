// ibv_modify_qp: the state machine and attribute masks (emu/qp_state_rules.h), then the value
// checks the kernel and rxe make (rxe_qp_chk_attr), then the change itself.
#include "address_vector.h"
#include "device_limits.h"
#include "emu/access_flags.h"
#include "emu/qp_state_rules.h"
#include "verbs.h"

#include <cerrno>
#include <cstring>

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

int check_values(const Device& dev, const ibv_qp_attr& a, uint32_t mask) {
    if ((mask & IBV_QP_PORT) && a.port_num != 1) return EINVAL;
    if ((mask & IBV_QP_PKEY_INDEX) && a.pkey_index >= limits::kPkeyTableLen) return EINVAL;
    if ((mask & IBV_QP_PATH_MTU) &&
        (!valid_mtu(raw(a.path_mtu)) || raw(a.path_mtu) > raw(dev.port_attr().max_mtu)))
        return EINVAL;
    if ((mask & IBV_QP_PATH_MIG_STATE) && raw(a.path_mig_state) > IBV_MIG_ARMED) return EINVAL;
    if ((mask & IBV_QP_AV))
        if (int err = check_address_vector(dev, a.ah_attr)) return err;
    if ((mask & IBV_QP_ALT_PATH)) {
        if (a.alt_port_num != 1 || a.alt_pkey_index >= limits::kPkeyTableLen) return EINVAL;
        if (int err = check_address_vector(dev, a.alt_ah_attr)) return err;
    }
    if ((mask & IBV_QP_ACCESS_FLAGS))
        if (int err = emu::check_qp_access(a.qp_access_flags)) return err;
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.max_rd_atomic > limits::kMaxQpRdAtom) return EINVAL;
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a.max_dest_rd_atomic > limits::kMaxQpRdAtom)
        return EINVAL;
    // Field widths of the wire and the IBA attributes.
    if ((mask & IBV_QP_TIMEOUT) && a.timeout > 31) return EINVAL;
    if ((mask & IBV_QP_RETRY_CNT) && a.retry_cnt > 7) return EINVAL;
    if ((mask & IBV_QP_RNR_RETRY) && a.rnr_retry > 7) return EINVAL;
    if ((mask & IBV_QP_MIN_RNR_TIMER) && a.min_rnr_timer > 31) return EINVAL;
    if ((mask & IBV_QP_DEST_QPN) && a.dest_qp_num > kPsnMask) return EINVAL;
    return 0;
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
    if (!qp) return EINVAL;
    if (qp->ind_table) return EOPNOTSUPP; // an RSS QP has no queues of its own to change
    const ibv_qp_attr& a = q.attr;
    // As rxe: a caller-supplied current state stands in for the QP's own.
    uint32_t raw_cur = (q.mask & IBV_QP_CUR_STATE) ? raw(a.cur_qp_state) : raw(qp->attr.qp_state);
    uint32_t raw_next = (q.mask & IBV_QP_STATE) ? raw(a.qp_state) : raw_cur;
    if (raw_cur > IBV_QPS_ERR || raw_next > IBV_QPS_ERR) return EINVAL;
    auto cur = static_cast<ibv_qp_state>(raw_cur);
    auto next = static_cast<ibv_qp_state>(raw_next);
    if (!emu::modify_is_ok(qp->type, cur, next, q.mask)) {
        c.log.info("{} qp#{} modify {}->{} rejected: mask {:#x} not allowed for this transition",
                   c.prefix, qp->handle, emu::qp_state_name(cur), emu::qp_state_name(next), q.mask);
        return EINVAL;
    }
    if (int err = check_values(c.nic.device(), a, q.mask)) {
        c.log.info("{} qp#{} modify {}->{} rejected: attribute value out of range (mask {:#x})",
                   c.prefix, qp->handle, emu::qp_state_name(cur), emu::qp_state_name(next), q.mask);
        return err;
    }
    apply(*qp, a, q.mask, next);
    if (DataPath* dp = c.nic.data_path()) dp->qp_modified(*qp, cur);
    c.log.debug("{} qp#{} {} -> {} (mask {:#x})", c.prefix, qp->handle, emu::qp_state_name(cur),
                emu::qp_state_name(next), q.mask);
    return 0;
}

} // namespace nicsim
