// Tracing of the new post-send API: ibv_wr_start, one ibv_wr_<opcode> per work request with
// ibv_wr_set_* after it, ibv_wr_complete. The ops live in each QP's struct ibv_qp_ex, so in
// trace mode a QP made with send_ops_flags gets wrappers that collect each work request (its
// opcode's operands, then its SGEs or inline data, UD address or XRC SRQ) and write the batch at
// ibv_wr_complete, in the very line format of ibv_post_send (a program that posts either way
// traces the same), and then call the backend's own op.
#include "emu/wr_opcodes.h"
#include "trace/trace.h"

#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <tuple>
#include <vector>

namespace verbs::trace {
namespace {

struct WatchedQp {
    ibv_qp_ex original; // the backend's own ops
    std::vector<SendWr> batch;
};

std::shared_mutex watched_mutex;
std::map<const ibv_qp*, WatchedQp> watched; // by the ibv_qp inside the ibv_qp_ex

// The QP's entry. The map only changes at create and destroy, and one batch belongs to one
// thread (the app serializes ibv_wr_start..complete per QP), so the entry is used unlocked.
WatchedQp& entry(const ibv_qp_ex* qp) {
    std::shared_lock lock(watched_mutex);
    return watched.at(&qp->qp_base);
}

// What an ibv_wr_<opcode>'s arguments are, by what its opcode carries (emu/wr_opcodes.h) and
// verbs.h's ibv_qp_ex ops: the remote address first (rkey, addr), then the immediate, the
// invalidated rkey or the atomic's operands (compare_add, then a compare-swap's swap).
template <ibv_wr_opcode Opcode, typename... A> void take_operands(SendWr& w, A... a) {
    auto args = std::make_tuple(a...);
    constexpr bool remote = emu::wr_has(Opcode, emu::kWrRemote);
    if constexpr (remote) {
        w.has_remote = true;
        w.rkey = std::get<0>(args);
        w.remote_addr = std::get<1>(args);
    }
    if constexpr (emu::wr_has(Opcode, emu::kWrImm)) {
        w.has_imm = true;
        w.imm_data = std::get < remote ? 2 : 0 > (args);
    }
    if constexpr (emu::wr_has(Opcode, emu::kWrInvalidate)) {
        w.has_invalidate = true;
        w.invalidate_rkey = std::get<0>(args);
    }
    if constexpr (emu::wr_has(Opcode, emu::kWrAtomic)) {
        w.has_atomic = true;
        w.compare_add = std::get<2>(args);
        if constexpr (sizeof...(A) > 3) w.swap = std::get<3>(args);
    }
}

// ibv_wr_<opcode>: starts a work request with the wr_id and wr_flags the app set before it.
template <auto Member, ibv_wr_opcode Opcode> struct Op;
template <typename... A, void (*ibv_qp_ex::*Member)(ibv_qp_ex*, A...), ibv_wr_opcode Opcode>
struct Op<Member, Opcode> {
    static void call(ibv_qp_ex* qp, A... args) {
        WatchedQp& w = entry(qp);
        SendWr& wr = w.batch.emplace_back();
        wr.qp_num = qp->qp_base.qp_num;
        wr.wr_id = qp->wr_id;
        wr.opcode = Opcode;
        wr.flags = qp->wr_flags;
        take_operands<Opcode>(wr, args...);
        (w.original.*Member)(qp, args...);
    }
};

template <auto Member, ibv_wr_opcode Opcode> void wrap_op(ibv_qp_ex* qp) {
    if (qp->*Member) qp->*Member = &Op<Member, Opcode>::call;
}

// The work request being built: what a classic WR's fields would hold.
SendWr* last(WatchedQp& w) {
    return w.batch.empty() ? nullptr : &w.batch.back();
}

void set_sge(ibv_qp_ex* qp, uint32_t lkey, uint64_t addr, uint32_t length) {
    WatchedQp& w = entry(qp);
    if (SendWr* wr = last(w)) wr->sges.push_back({addr, length, lkey});
    w.original.wr_set_sge(qp, lkey, addr, length);
}

void set_sge_list(ibv_qp_ex* qp, size_t num_sge, const ibv_sge* sg_list) {
    WatchedQp& w = entry(qp);
    if (SendWr* wr = last(w)) wr->sges.insert(wr->sges.end(), sg_list, sg_list + num_sge);
    w.original.wr_set_sge_list(qp, num_sge, sg_list);
}

void set_inline_data(ibv_qp_ex* qp, void* addr, size_t length) {
    WatchedQp& w = entry(qp);
    if (SendWr* wr = last(w))
        wr->sges.push_back({reinterpret_cast<uintptr_t>(addr), static_cast<uint32_t>(length), 0});
    w.original.wr_set_inline_data(qp, addr, length);
}

void set_inline_data_list(ibv_qp_ex* qp, size_t num_buf, const ibv_data_buf* buf_list) {
    WatchedQp& w = entry(qp);
    if (SendWr* wr = last(w))
        for (size_t i = 0; i < num_buf; ++i)
            wr->sges.push_back({reinterpret_cast<uintptr_t>(buf_list[i].addr),
                                static_cast<uint32_t>(buf_list[i].length), 0});
    w.original.wr_set_inline_data_list(qp, num_buf, buf_list);
}

void set_ud_addr(ibv_qp_ex* qp, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
    WatchedQp& w = entry(qp);
    if (SendWr* wr = last(w)) {
        wr->ah = ah;
        wr->remote_qpn = remote_qpn;
        wr->remote_qkey = remote_qkey;
    }
    w.original.wr_set_ud_addr(qp, ah, remote_qpn, remote_qkey);
}

void set_xrc_srqn(ibv_qp_ex* qp, uint32_t remote_srqn) {
    WatchedQp& w = entry(qp);
    if (SendWr* wr = last(w)) {
        wr->has_srqn = true;
        wr->remote_srqn = remote_srqn;
    }
    w.original.wr_set_xrc_srqn(qp, remote_srqn);
}

void start(ibv_qp_ex* qp) {
    WatchedQp& w = entry(qp);
    w.batch.clear();
    w.original.wr_start(qp);
}

int complete(ibv_qp_ex* qp) {
    WatchedQp& w = entry(qp);
    for (const SendWr& wr : w.batch)
        write_line("wr", send_wr_text(wr));
    w.batch.clear();
    int ret = w.original.wr_complete(qp);
    if (ret) write_line("wr", "send failed ret=" + std::to_string(ret) + " bad_wr_id=?");
    return ret;
}

void abort_batch(ibv_qp_ex* qp) {
    WatchedQp& w = entry(qp);
    w.batch.clear(); // nothing was posted
    w.original.wr_abort(qp);
}

template <auto Member, auto Wrapper> void wrap_setter(ibv_qp_ex* qp) {
    if (qp->*Member) qp->*Member = Wrapper;
}

} // namespace

void watch_send_ops(ibv_qp* qp) {
    ibv_qp_ex* qx = ibv_qp_to_qp_ex(qp);
    if (!enabled() || !qx || !qx->wr_start) return;
    {
        std::unique_lock lock(watched_mutex);
        WatchedQp& w = watched[qp];
        w.original = *qx;
        w.batch.clear();
    }
    wrap_op<&ibv_qp_ex::wr_send, IBV_WR_SEND>(qx);
    wrap_op<&ibv_qp_ex::wr_send_imm, IBV_WR_SEND_WITH_IMM>(qx);
    wrap_op<&ibv_qp_ex::wr_send_inv, IBV_WR_SEND_WITH_INV>(qx);
    wrap_op<&ibv_qp_ex::wr_send_tso, IBV_WR_TSO>(qx);
    wrap_op<&ibv_qp_ex::wr_rdma_write, IBV_WR_RDMA_WRITE>(qx);
    wrap_op<&ibv_qp_ex::wr_rdma_write_imm, IBV_WR_RDMA_WRITE_WITH_IMM>(qx);
    wrap_op<&ibv_qp_ex::wr_rdma_read, IBV_WR_RDMA_READ>(qx);
    wrap_op<&ibv_qp_ex::wr_atomic_cmp_swp, IBV_WR_ATOMIC_CMP_AND_SWP>(qx);
    wrap_op<&ibv_qp_ex::wr_atomic_fetch_add, IBV_WR_ATOMIC_FETCH_AND_ADD>(qx);
    wrap_op<&ibv_qp_ex::wr_atomic_write, IBV_WR_ATOMIC_WRITE>(qx);
    wrap_op<&ibv_qp_ex::wr_bind_mw, IBV_WR_BIND_MW>(qx);
    wrap_op<&ibv_qp_ex::wr_local_inv, IBV_WR_LOCAL_INV>(qx);
    wrap_setter<&ibv_qp_ex::wr_set_sge, set_sge>(qx);
    wrap_setter<&ibv_qp_ex::wr_set_sge_list, set_sge_list>(qx);
    wrap_setter<&ibv_qp_ex::wr_set_inline_data, set_inline_data>(qx);
    wrap_setter<&ibv_qp_ex::wr_set_inline_data_list, set_inline_data_list>(qx);
    wrap_setter<&ibv_qp_ex::wr_set_ud_addr, set_ud_addr>(qx);
    wrap_setter<&ibv_qp_ex::wr_set_xrc_srqn, set_xrc_srqn>(qx);
    wrap_setter<&ibv_qp_ex::wr_start, start>(qx);
    wrap_setter<&ibv_qp_ex::wr_complete, complete>(qx);
    wrap_setter<&ibv_qp_ex::wr_abort, abort_batch>(qx);
}

void forget_send_ops(ibv_qp* qp) {
    std::unique_lock lock(watched_mutex);
    auto it = watched.find(qp);
    if (it == watched.end()) return;
    ibv_qp_ex* qx = reinterpret_cast<ibv_qp_ex*>(qp); // qp_base is its first member
    // The backend's destroy may look at its own ops: put them back (all of them, and nothing
    // before them: the QP's state lives there).
    constexpr size_t first_op = offsetof(ibv_qp_ex, wr_atomic_cmp_swp);
    std::memcpy(reinterpret_cast<char*>(qx) + first_op,
                reinterpret_cast<const char*>(&it->second.original) + first_op,
                sizeof(ibv_qp_ex) - first_op);
    watched.erase(it);
}

} // namespace verbs::trace
