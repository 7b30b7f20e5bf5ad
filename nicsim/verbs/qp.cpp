#include "device_limits.h"
#include "verbs.h"

#include <cerrno>

namespace nicsim {

namespace {

bool supported_type(uint32_t type) {
    return type == IBV_QPT_RC || type == IBV_QPT_UC || type == IBV_QPT_UD;
}

int check_caps(const ibv_qp_cap& cap, bool has_srq) {
    using namespace limits;
    if (cap.max_send_wr > kMaxQpWr || cap.max_send_sge > kMaxSge) return EINVAL;
    if (cap.max_inline_data > kMaxInlineData) return EINVAL;
    if (!has_srq && (cap.max_recv_wr > kMaxQpWr || cap.max_recv_sge > kMaxSge)) return EINVAL;
    return 0;
}

// One memfd with the SQ ring and, without an SRQ, the RQ ring after it. The rings are sized
// to powers of two; the caps report what they hold.
int make_qp_rings(Qp& qp, std::vector<UniqueFd>& fds) {
    using namespace emu::ipc;
    ibv_qp_cap& cap = qp.cap;
    uint32_t sq_entries = round_up_pow2(cap.max_send_wr ? cap.max_send_wr : 1);
    uint32_t sq_size = send_wqe_size(cap.max_send_sge, cap.max_inline_data);
    size_t sq_bytes = ring_bytes(sq_entries, sq_size);
    uint32_t rq_entries = qp.srq ? 0 : round_up_pow2(cap.max_recv_wr ? cap.max_recv_wr : 1);
    uint32_t rq_size = recv_wqe_size(cap.max_recv_sge);
    size_t total = sq_bytes + (rq_entries ? ring_bytes(rq_entries, rq_size) : 0);
    UniqueFd fd;
    if (int err = SharedMemory::create("rdmaemu-qp", total, qp.memory, fd)) return err;
    char* base = static_cast<char*>(qp.memory.data());
    qp.sq = {reinterpret_cast<RingHeader*>(base), sq_entries, sq_size};
    qp.sq.header->entries = sq_entries;
    qp.sq.header->entry_size = sq_size;
    cap.max_send_wr = sq_entries;
    if (rq_entries) {
        qp.rq = {reinterpret_cast<RingHeader*>(base + sq_bytes), rq_entries, rq_size};
        qp.rq.header->entries = rq_entries;
        qp.rq.header->entry_size = rq_size;
        cap.max_recv_wr = rq_entries;
    }
    fds.push_back(std::move(fd));
    return 0;
}

} // namespace

int create_qp(VerbContext& c, const ipc::CreateQpReq& q, ipc::CreateQpReply& r) {
    if (q.qp_type == IBV_QPT_XRC_SEND || q.qp_type == IBV_QPT_XRC_RECV ||
        q.qp_type == IBV_QPT_RAW_PACKET)
        return EOPNOTSUPP;
    if (!supported_type(q.qp_type)) return EINVAL;
    Pd* pd = c.objects.pds.get(q.pd);
    Cq* send_cq = c.objects.cqs.get(q.send_cq);
    Cq* recv_cq = c.objects.cqs.get(q.recv_cq);
    if (!pd || !send_cq || !recv_cq) return EINVAL;
    Srq* srq = nullptr;
    if (q.srq) {
        srq = c.objects.srqs.get(q.srq);
        if (!srq) return EINVAL;
    }
    if (int err = check_caps(q.cap, srq != nullptr)) return err;
    if (c.nic.totals().qp >= limits::kMaxQp) return ENOMEM;

    auto qp = std::make_unique<Qp>();
    qp->type = static_cast<ibv_qp_type>(q.qp_type);
    qp->pd = pd;
    qp->send_cq = send_cq;
    qp->recv_cq = recv_cq;
    qp->srq = srq;
    qp->cap = q.cap;
    if (srq) qp->cap.max_recv_wr = qp->cap.max_recv_sge = 0; // receives come from the SRQ
    qp->sq_sig_all = q.sq_sig_all != 0;
    qp->pid = c.pid;
    qp->owner = &c.objects;
    if (int err = make_qp_rings(*qp, c.pass_fds)) return err;
    qp->attr.qp_state = IBV_QPS_RESET;
    qp->attr.cur_qp_state = IBV_QPS_RESET;
    qp->attr.path_mtu = IBV_MTU_1024;
    qp->attr.port_num = 1;
    Qp& made = c.objects.qps.add(std::move(qp));
    if (!c.nic.register_qp(made)) {
        c.objects.qps.erase(made.handle);
        return ENOMEM;
    }
    ++pd->users;
    ++send_cq->users;
    ++recv_cq->users;
    if (srq) ++srq->users;
    ++c.nic.totals().qp;
    r.handle = made.handle;
    r.qpn = made.qpn;
    r.cap = made.cap;
    r.sq_entries = made.sq.entries;
    r.sq_wqe_size = made.sq.entry_size;
    r.rq_entries = made.rq.entries;
    r.rq_wqe_size = made.rq.entry_size;
    r.rq_offset = made.rq.entries ? reinterpret_cast<char*>(made.rq.header) -
                                        static_cast<char*>(made.memory.data())
                                  : 0;
    r.ring_bytes = made.memory.size();
    c.log.debug("{} qp#{} created: qpn {:#x} type {} sq {}x{} rq {}x{} inline {}{}", c.prefix,
                made.handle, made.qpn, q.qp_type, made.cap.max_send_wr, made.cap.max_send_sge,
                made.cap.max_recv_wr, made.cap.max_recv_sge, made.cap.max_inline_data,
                srq ? fmt::format(" srq#{}", srq->handle) : "");
    return 0;
}

int query_qp(VerbContext& c, const ipc::QueryQpReq& q, ipc::QueryQpReply& r) {
    Qp* qp = c.objects.qps.get(q.qp);
    if (!qp) return EINVAL;
    // Like the kernel, report every attribute whatever the mask asks for.
    r.attr = qp->attr;
    r.attr.cur_qp_state = qp->attr.qp_state;
    r.attr.cap = qp->cap;
    r.cap = qp->cap;
    r.qp_type = qp->type;
    r.sq_sig_all = qp->sq_sig_all;
    return 0;
}

void free_qp(Nic& nic, SessionObjects& objs, Qp& qp) {
    if (DataPath* dp = nic.data_path()) dp->qp_destroying(qp);
    nic.mcast_detach_all(qp); // destroying a QP detaches it from its groups
    nic.unregister_qp(qp);
    --qp.pd->users;
    --qp.send_cq->users;
    --qp.recv_cq->users;
    if (qp.srq) --qp.srq->users;
    --nic.totals().qp;
    objs.qps.erase(qp.handle);
}

int destroy_qp(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    Qp* qp = c.objects.qps.get(q.handle);
    if (!qp) return EINVAL;
    c.log.debug("{} qp#{} destroyed (qpn {:#x})", c.prefix, qp->handle, qp->qpn);
    free_qp(c.nic, c.objects, *qp);
    return 0;
}

} // namespace nicsim
