// Receive work queues and their indirection tables (ibv_create_wq, ibv_modify_wq,
// ibv_destroy_wq, ibv_create_rwq_ind_table, ibv_destroy_rwq_ind_table): the receive side of
// RSS QPs. A WQ is a ring like an SRQ's with a CQ of its own.
#include "nic/device_limits.h"
#include "objects/ring_factory.h"
#include "verbs.h"

#include <cerrno>

namespace nicsim {

static_assert(limits::kMaxRwqIndTableLog == ipc::kMaxRwqIndTableLog);
static_assert(
    limits::kMaxRwqIndTables == 4096 && limits::kMaxWq == 16384,
    "verbs_api/backends/emulated/device_query.cpp reports these in rss_caps and max_wq_type_rq");

int create_wq(VerbContext& c, const ipc::CreateWqReq& q, ipc::CreateWqReply& r) {
    Pd* pd = c.objects.pds.get(q.pd);
    Cq* cq = c.objects.cqs.get(q.cq);
    if (!pd || !cq) return EINVAL;
    if (q.wq_type != IBV_WQT_RQ) return EINVAL;
    if (q.comp_mask & ~uint32_t(IBV_WQ_INIT_ATTR_FLAGS)) return EINVAL;
    if ((q.comp_mask & IBV_WQ_INIT_ATTR_FLAGS) && q.create_flags) return EOPNOTSUPP;
    if (q.max_wr == 0 || q.max_wr > limits::kMaxQpWr || q.max_sge > limits::kMaxSge) return EINVAL;
    if (c.objects.wqs.size() >= limits::kMaxWq) return ENOMEM;
    auto wq = std::make_unique<Wq>();
    wq->pd = pd;
    wq->cq = cq;
    wq->max_sge = q.max_sge;
    wq->owner = &c.objects;
    uint32_t entries = emu::ipc::round_up_pow2(q.max_wr);
    uint32_t wqe_size = emu::ipc::recv_wqe_size(q.max_sge);
    UniqueFd fd;
    if (int err = create_ring("rdmaemu-wq", entries, wqe_size, wq->memory, fd, wq->ring))
        return err;
    wq->wq_num = c.nic.next_wq_num();
    c.pass_fds.push_back(std::move(fd));
    Wq& made = c.objects.wqs.add(std::move(wq));
    ++pd->users;
    ++cq->users;
    r.handle = made.handle;
    r.wq_num = made.wq_num;
    r.max_wr = entries;
    r.max_sge = made.max_sge;
    r.entries = entries;
    r.wqe_size = wqe_size;
    r.ring_bytes = made.memory.size();
    c.log.debug("{} wq#{} created: wq_num {:#x} max_wr {} max_sge {} cq#{}", c.prefix, made.handle,
                made.wq_num, entries, made.max_sge, cq->handle);
    return 0;
}

int modify_wq(VerbContext& c, const ipc::ModifyWqReq& q, ipc::Empty&) {
    Wq* wq = c.objects.wqs.get(q.wq);
    if (!wq) return EINVAL;
    constexpr uint32_t kKnown = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE | IBV_WQ_ATTR_FLAGS;
    if (q.attr_mask & ~kKnown) return EINVAL;
    if ((q.attr_mask & IBV_WQ_ATTR_FLAGS) && q.flags_mask) return EOPNOTSUPP;
    uint32_t cur = (q.attr_mask & IBV_WQ_ATTR_CURR_STATE) ? q.curr_wq_state : uint32_t(wq->state);
    uint32_t next = (q.attr_mask & IBV_WQ_ATTR_STATE) ? q.wq_state : cur;
    if (cur > IBV_WQS_ERR || next > IBV_WQS_ERR) return EINVAL;
    if (cur != wq->state) return EINVAL; // the caller's idea of the state is wrong
    // RESET -> RDY, RDY -> RDY, any -> RESET, RDY -> ERR (as the kernel's WQ state machine).
    bool ok = next == IBV_WQS_RESET || (next == IBV_WQS_RDY && cur != IBV_WQS_ERR) ||
              (next == IBV_WQS_ERR && cur == IBV_WQS_RDY);
    if (!ok) return EINVAL;
    auto from = wq->state;
    wq->state = static_cast<ibv_wq_state>(next);
    if (next == IBV_WQS_RESET) {
        // The ring restarts empty.
        wq->ring.header->consumer.store(wq->ring.header->producer.load(std::memory_order_acquire),
                                        std::memory_order_release);
    } else if (next == IBV_WQS_ERR && from != IBV_WQS_ERR) {
        if (DataPath* dp = c.nic.data_path()) dp->wq_error(*wq);
    }
    c.log.debug("{} wq#{} state {} -> {}", c.prefix, wq->handle, int(from), next);
    return 0;
}

void free_wq(Nic& nic, SessionObjects& objs, Wq& wq) {
    (void)nic;
    --wq.pd->users;
    --wq.cq->users;
    objs.wqs.erase(wq.handle);
}

int destroy_wq(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    static constexpr DestroyRule<Wq> rule{"WQ", &Wq::users, "indirection table(s) naming it", "wq",
                                          "destroyed"};
    return destroy_unheld(c, c.objects.wqs, q.handle, rule,
                          [&](Wq& wq) { free_wq(c.nic, c.objects, wq); });
}

int create_rwq_ind_table(VerbContext& c, const ipc::CreateRwqIndTableReq& q,
                         ipc::CreateRwqIndTableReply& r) {
    if (q.comp_mask) return EINVAL;
    if (q.log_size > limits::kMaxRwqIndTableLog) return EINVAL;
    if (c.objects.ind_tables.size() >= limits::kMaxRwqIndTables) return ENOMEM;
    auto table = std::make_unique<RwqIndTable>();
    uint32_t n = 1u << q.log_size;
    for (uint32_t i = 0; i < n; ++i) {
        Wq* wq = c.objects.wqs.get(q.wqs[i]);
        if (!wq) return EINVAL;
        table->wqs.push_back(wq);
    }
    for (Wq* wq : table->wqs)
        ++wq->users;
    table->ind_tbl_num = c.nic.next_ind_table_num();
    RwqIndTable& made = c.objects.ind_tables.add(std::move(table));
    r.handle = made.handle;
    r.ind_tbl_num = made.ind_tbl_num;
    c.log.debug("{} rwq_ind_table#{} created: {} entries", c.prefix, made.handle, n);
    return 0;
}

void free_ind_table(Nic& nic, SessionObjects& objs, RwqIndTable& table) {
    (void)nic;
    for (Wq* wq : table.wqs)
        --wq->users;
    objs.ind_tables.erase(table.handle);
}

int destroy_rwq_ind_table(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    static constexpr DestroyRule<RwqIndTable> rule{"indirection table", &RwqIndTable::users,
                                                   "RSS QP(s)", "rwq_ind_table", "destroyed"};
    return destroy_unheld(c, c.objects.ind_tables, q.handle, rule,
                          [&](RwqIndTable& table) { free_ind_table(c.nic, c.objects, table); });
}

} // namespace nicsim
