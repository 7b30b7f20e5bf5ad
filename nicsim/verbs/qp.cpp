#include "nic/device_limits.h"
#include "objects/ring_factory.h"
#include "transport/engines.h"
#include "verbs.h"

#include <algorithm>
#include <cerrno>
#include <vector>

namespace nicsim {

namespace {

bool supported_type(uint32_t type) {
    return type == IBV_QPT_RC || type == IBV_QPT_UC || type == IBV_QPT_UD ||
           type == IBV_QPT_RAW_PACKET || type == IBV_QPT_XRC_SEND || type == IBV_QPT_XRC_RECV;
}

// Receives come from the QP's own RQ unless it has an SRQ or is an XRC QP (an XRC_SEND QP
// receives nothing; an XRC_RECV QP uses the XRC SRQ each request names).
bool has_rq(const Qp& qp) {
    return !qp.srq && qp.type != IBV_QPT_XRC_SEND && qp.type != IBV_QPT_XRC_RECV;
}

// Why the caps ask for more than the device has (its ibv_query_device limits), or "".
// Programs probe with these: libfabric's verbs provider raises max_inline_data until EINVAL.
std::string caps_beyond_device(const ibv_qp_cap& cap, bool has_srq) {
    using namespace limits;
    auto over = [](const char* what, uint32_t asked, uint32_t max) {
        return fmt::format("cap.{} {} exceeds the device's {}", what, asked, max);
    };
    if (cap.max_send_wr > kMaxQpWr) return over("max_send_wr", cap.max_send_wr, kMaxQpWr);
    if (cap.max_send_sge > kMaxSge) return over("max_send_sge", cap.max_send_sge, kMaxSge);
    if (cap.max_inline_data > kMaxInlineData)
        return over("max_inline_data", cap.max_inline_data, kMaxInlineData);
    if (has_srq) return "";
    if (cap.max_recv_wr > kMaxQpWr) return over("max_recv_wr", cap.max_recv_wr, kMaxQpWr);
    if (cap.max_recv_sge > kMaxSge) return over("max_recv_sge", cap.max_recv_sge, kMaxSge);
    return "";
}

// One memfd with the SQ ring and, without an SRQ, the RQ ring right after it, on the next cache
// line rather than the next page (as mlx5's one WQ buffer): a small SQ's and the RQ's headers
// share a page, the one page of an idle QP's rings the NIC touches. The rings are sized to
// powers of two; the caps report what they hold. A send WQE's room for SGEs holds inline
// data as well, so max_inline_data is at least that room (rxe's rxe_qp_init_req, mlx5's WQE
// size: rdma_xclient posts 16 bytes inline on a QP that asked for none and one SGE).
int make_qp_rings(Qp& qp, std::vector<UniqueFd>& fds) {
    using namespace emu::ipc;
    ibv_qp_cap& cap = qp.cap;
    uint32_t sq_entries = round_up_pow2(cap.max_send_wr ? cap.max_send_wr : 1);
    uint32_t sq_size = send_wqe_size(cap.max_send_sge, cap.max_inline_data);
    size_t rq_offset = ring_span(sq_entries, sq_size);
    uint32_t rq_entries = has_rq(qp) ? round_up_pow2(cap.max_recv_wr ? cap.max_recv_wr : 1) : 0;
    uint32_t rq_size = recv_wqe_size(cap.max_recv_sge);
    size_t total = pages_for(rq_offset + (rq_entries ? ring_span(rq_entries, rq_size) : 0));
    UniqueFd fd;
    if (int err = SharedMemory::create("rdmaemu-qp", total, qp.memory, fd)) return err;
    char* base = static_cast<char*>(qp.memory.data());
    qp.sq = place_ring(base, sq_entries, sq_size);
    cap.max_send_wr = sq_entries;
    cap.max_inline_data =
        std::min<uint32_t>(limits::kMaxInlineData,
                           std::max<uint32_t>(cap.max_inline_data, cap.max_send_sge * sizeof(Sge)));
    if (rq_entries) {
        qp.rq = place_ring(base + rq_offset, rq_entries, rq_size);
        cap.max_recv_wr = rq_entries;
    }
    fds.push_back(std::move(fd));
    return 0;
}

// Fills the reply of a QP create from the QP made.
void fill_reply(const Qp& made, ipc::CreateQpReply& r) {
    r.handle = made.handle;
    r.qpn = made.qpn;
    r.cap = made.cap;
    r.sq_entries = made.sq.entries;
    r.sq_wqe_size = made.sq.entry_size;
    r.rq_entries = made.rq.entries;
    r.rq_wqe_size = made.rq.entry_size;
    r.rq_offset = made.rq.entries ? reinterpret_cast<const char*>(made.rq.header) -
                                        static_cast<const char*>(made.memory.data())
                                  : 0;
    r.ring_bytes = made.memory.size();
    r.doorbell_slot = made.doorbell_slot;
}

// Registers a QP made by create_qp: its QPN, then the totals. False when no QPN is left.
bool enroll(VerbContext& c, Qp& made) {
    if (!c.nic.register_qp(made)) {
        c.objects.qps.erase(made.handle);
        return false;
    }
    c.objects.take_doorbell_slot(made);
    ++c.nic.totals().qp;
    c.nic.shares().charge(emu::Share::Qp, made.pid);
    return true;
}

void reset_attr(Qp& qp) {
    qp.attr.qp_state = IBV_QPS_RESET;
    qp.attr.cur_qp_state = IBV_QPS_RESET;
    qp.attr.path_mtu = IBV_MTU_1024;
    qp.attr.port_num = 1;
}

// An XRC_RECV QP: no PD, CQs or queues; the domain is all it has (the kernel's XRC_TGT).
int create_xrc_recv(VerbContext& c, const ipc::CreateQpReq& q, ipc::CreateQpReply& r) {
    XrcdHandle* xrcd = c.objects.xrcds.get(q.xrcd);
    if (!xrcd) return EINVAL;
    if (c.nic.totals().qp >= limits::kMaxQp) return ENOMEM;
    if (int err = over_share(c, emu::Share::Qp)) return err;
    auto qp = std::make_unique<Qp>();
    qp->type = IBV_QPT_XRC_RECV;
    qp->xrcd = xrcd;
    qp->domain = xrcd->xrcd;
    qp->pid = c.pid;
    qp->owner = &c.objects;
    if (int err = make_qp_rings(*qp, c.pass_fds)) return err; // a one-slot SQ nothing uses
    qp->cap = {};
    reset_attr(*qp);
    Qp& made = c.objects.qps.add(std::move(qp));
    if (!enroll(c, made)) return ENOMEM;
    ++xrcd->users;
    fill_reply(made, r);
    c.log.debug("{} qp#{} created: qpn {:#x} XRC_RECV in domain {}", c.prefix, made.handle,
                made.qpn, made.domain->id);
    return 0;
}

} // namespace

int create_qp(VerbContext& c, const ipc::CreateQpReq& q, ipc::CreateQpReply& r) {
    if (!supported_type(q.qp_type)) return EINVAL;
    // The kernel's create_qp: raw packet QPs only for a process with CAP_NET_RAW.
    if (q.qp_type == IBV_QPT_RAW_PACKET && !c.net_raw)
        return c.refuse(EPERM, "raw packet QPs need CAP_NET_RAW (the process had none when it "
                               "opened the device)");
    if (q.qp_type == IBV_QPT_XRC_RECV) return create_xrc_recv(c, q, r);
    const bool xrc_send = q.qp_type == IBV_QPT_XRC_SEND;
    Pd* pd = c.objects.pds.get(q.pd);
    Cq* send_cq = c.objects.cqs.get(q.send_cq);
    // An XRC_SEND QP has no receive side: its recv_cq and SRQ are ignored (as the kernel's).
    Cq* recv_cq = xrc_send ? nullptr : c.objects.cqs.get(q.recv_cq);
    if (!pd) return c.refuse(EINVAL, fmt::format("pd handle {} names no PD of this context", q.pd));
    if (!send_cq || (!recv_cq && !xrc_send))
        return c.refuse(EINVAL, fmt::format("{} handle {} names no CQ of this context",
                                            send_cq ? "recv_cq" : "send_cq",
                                            send_cq ? q.recv_cq : q.send_cq));
    Srq* srq = nullptr;
    if (q.srq && !xrc_send) {
        srq = c.objects.srqs.get(q.srq);
        if (!srq)
            return c.refuse(EINVAL,
                            fmt::format("srq handle {} names no SRQ of this context", q.srq));
        // Tag matching is for RC (tm_caps.flags: IBV_TM_CAP_RC); XRC SRQs are for XRC targets.
        bool tm_ok = srq->type == IBV_SRQT_TM && q.qp_type == IBV_QPT_RC;
        if (srq->type != IBV_SRQT_BASIC && !tm_ok)
            return c.refuse(EINVAL, srq->type == IBV_SRQT_TM
                                        ? "a tag-matching SRQ serves RC QPs only"
                                        : "an XRC SRQ serves XRC_RECV QPs, not this QP's receives");
    }
    ibv_qp_cap cap = q.cap;
    if (xrc_send) cap.max_recv_wr = cap.max_recv_sge = 0;
    if (auto why = caps_beyond_device(cap, srq != nullptr || xrc_send); !why.empty())
        return c.refuse(EINVAL, why);
    if (c.nic.totals().qp >= limits::kMaxQp) return ENOMEM;
    if (int err = over_share(c, emu::Share::Qp)) return err;

    auto qp = std::make_unique<Qp>();
    qp->type = static_cast<ibv_qp_type>(q.qp_type);
    qp->pd = pd;
    qp->send_cq = send_cq;
    qp->recv_cq = recv_cq;
    qp->srq = srq;
    qp->cap = cap;
    if (srq) qp->cap.max_recv_wr = qp->cap.max_recv_sge = 0; // receives come from the SRQ
    qp->sq_sig_all = q.sq_sig_all != 0;
    qp->pid = c.pid;
    qp->owner = &c.objects;
    if (int err = make_qp_rings(*qp, c.pass_fds)) return err;
    reset_attr(*qp);
    Qp& made = c.objects.qps.add(std::move(qp));
    if (!enroll(c, made)) return ENOMEM;
    ++pd->users;
    ++send_cq->users;
    if (recv_cq) ++recv_cq->users;
    if (srq) ++srq->users;
    fill_reply(made, r);
    c.log.debug("{} qp#{} created: qpn {:#x} type {} sq {}x{} rq {}x{} inline {}{}", c.prefix,
                made.handle, made.qpn, q.qp_type, made.cap.max_send_wr, made.cap.max_send_sge,
                made.cap.max_recv_wr, made.cap.max_recv_sge, made.cap.max_inline_data,
                srq ? fmt::format(" srq#{}", srq->handle) : "");
    return 0;
}

int create_rss_qp(VerbContext& c, const ipc::CreateRssQpReq& q, ipc::CreateQpReply& r) {
    if (!c.net_raw) return EPERM; // a raw packet QP (see create_qp)
    Pd* pd = c.objects.pds.get(q.pd);
    RwqIndTable* table = c.objects.ind_tables.get(q.ind_table);
    if (!pd || !table) return EINVAL;
    if (q.hash_function != IBV_RX_HASH_FUNC_TOEPLITZ) return EOPNOTSUPP;
    constexpr uint64_t kFields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
                                 IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
                                 IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |
                                 IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
    if (q.fields_mask & ~kFields) return EOPNOTSUPP; // IPsec SPI, inner headers
    if (q.key_len == 0 || q.key_len > ipc::kMaxRxHashKeyLen) return EINVAL;
    if (c.nic.totals().qp >= limits::kMaxQp) return ENOMEM;
    if (int err = over_share(c, emu::Share::Qp)) return err;
    auto qp = std::make_unique<Qp>();
    qp->type = IBV_QPT_RAW_PACKET;
    qp->pd = pd;
    qp->pid = c.pid;
    qp->owner = &c.objects;
    qp->ind_table = table;
    qp->rx_hash_fields = q.fields_mask;
    qp->rx_hash_key.assign(q.key, q.key + q.key_len);
    qp->attr.qp_state = IBV_QPS_RESET;
    qp->attr.port_num = 1;
    Qp& made = c.objects.qps.add(std::move(qp));
    if (!c.nic.register_qp(made)) {
        c.objects.qps.erase(made.handle);
        return ENOMEM;
    }
    ++pd->users;
    ++table->users;
    ++c.nic.totals().qp;
    c.nic.shares().charge(emu::Share::Qp, made.pid);
    r.handle = made.handle;
    r.qpn = made.qpn;
    c.log.debug("{} qp#{} created: qpn {:#x} RSS over rwq_ind_table#{} ({} WQs), fields {:#x}",
                c.prefix, made.handle, made.qpn, table->handle, table->wqs.size(), q.fields_mask);
    return 0;
}

Qp* find_qp(SessionObjects& objects, uint32_t handle) {
    Qp* qp = objects.qps.get(handle);
    return qp && qp->shared ? qp->shared : qp;
}

int query_qp(VerbContext& c, const ipc::QueryQpReq& q, ipc::QueryQpReply& r) {
    Qp* qp = find_qp(c.objects, q.qp);
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

namespace {

// The QP itself goes: the transport lets go of it, its QPN and references are released.
void release(Nic& nic, Qp& qp) {
    nic.bytes_in_flight() -= qp.req.counted_in_flight; // what it sent no longer counts
    qp.req.counted_in_flight = 0;
    transport::leave_window(nic, qp);
    if (DataPath* dp = nic.data_path()) dp->qp_destroying(qp);
    nic.mcast_detach_all(qp); // destroying a QP detaches it from its groups
    nic.unregister_qp(qp);
    if (qp.pd) --qp.pd->users;
    if (qp.ind_table) --qp.ind_table->users;
    if (qp.send_cq) --qp.send_cq->users;
    if (qp.recv_cq) --qp.recv_cq->users;
    if (qp.srq) --qp.srq->users;
    if (qp.xrcd) --qp.xrcd->users;
    --nic.totals().qp;
    nic.shares().release(emu::Share::Qp, qp.pid);
}

} // namespace

void free_qp(Nic& nic, SessionObjects& objs, Qp& qp) {
    if (Qp* shared = qp.shared) {
        // An ibv_open_qp handle: the shared QP goes with the last of its holders.
        std::erase(shared->openers, &qp);
        --qp.xrcd->users;
        objs.qps.erase(qp.handle);
        if (!shared->owner && shared->openers.empty()) {
            release(nic, *shared);
            nic.drop_orphan(*shared);
        }
        return;
    }
    objs.drop_doorbell_slot(qp);
    if (!qp.openers.empty()) {
        // Opened elsewhere: it lives on, owned by no session, until they close it too.
        --qp.xrcd->users;
        qp.xrcd = nullptr;
        qp.owner = nullptr;
        nic.keep_orphan(objs.qps.release(qp.handle));
        return;
    }
    release(nic, qp);
    objs.qps.erase(qp.handle);
}

int open_qp(VerbContext& c, const ipc::OpenQpReq& q, ipc::OpenQpReply& r) {
    if (q.qp_type != IBV_QPT_XRC_RECV) return EINVAL; // only XRC targets are shareable
    XrcdHandle* xrcd = c.objects.xrcds.get(q.xrcd);
    if (!xrcd) return EINVAL;
    Qp* shared = c.nic.qp_by_qpn(q.qpn);
    if (!shared || shared->type != IBV_QPT_XRC_RECV || shared->domain != xrcd->xrcd) return EINVAL;
    auto qp = std::make_unique<Qp>();
    qp->type = IBV_QPT_XRC_RECV;
    qp->qpn = shared->qpn;
    qp->shared = shared;
    qp->xrcd = xrcd;
    qp->domain = xrcd->xrcd;
    qp->pid = c.pid;
    qp->owner = &c.objects;
    Qp& made = c.objects.qps.add(std::move(qp));
    shared->openers.push_back(&made);
    ++xrcd->users;
    r.handle = made.handle;
    r.state = shared->attr.qp_state;
    c.log.debug("{} qp#{} opened: XRC_RECV qpn {:#x}", c.prefix, made.handle, made.qpn);
    return 0;
}

int destroy_qp(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    Qp* qp = c.objects.qps.get(q.handle);
    if (!qp) return no_object(c, "QP", q.handle);
    // As the kernel: flows hold a reference on their QP.
    if (qp->flows) return in_use(c, "QP", q.handle, qp->flows, "flow(s) steering to it");
    if (DataPath* dp = c.nic.data_path()) dp->send_posted(*qp);
    c.log.debug("{} qp#{} destroyed (qpn {:#x})", c.prefix, qp->handle, qp->qpn);
    free_qp(c.nic, c.objects, *qp);
    return 0;
}

} // namespace nicsim
