#include "nic/device_limits.h"
#include "objects/ring_factory.h"
#include "transport/memory_access.h"
#include "verbs.h"

#include <cerrno>

namespace nicsim {

namespace {

// The SRQ both create verbs make: a basic one, or an XRC one in `xrcd` completing on `cq`.
int make_srq(VerbContext& c, Pd* pd, const ibv_srq_attr& a, ibv_srq_type type, XrcdHandle* xrcd,
             Cq* cq, ipc::CreateSrqReply& r) {
    if (a.max_wr == 0 || a.max_wr > limits::kMaxSrqWr) return EINVAL;
    if (a.max_sge > limits::kMaxSrqSge) return EINVAL;
    if (a.srq_limit > a.max_wr) return EINVAL;
    if (c.nic.totals().srq >= limits::kMaxSrq) return ENOMEM;
    auto srq = std::make_unique<Srq>();
    srq->type = type;
    srq->pd = pd;
    srq->xrcd = xrcd;
    srq->cq = cq;
    srq->attr = a;
    srq->pid = c.pid;
    srq->owner = &c.objects;
    uint32_t entries = emu::ipc::round_up_pow2(a.max_wr);
    uint32_t wqe_size = emu::ipc::recv_wqe_size(a.max_sge);
    UniqueFd fd;
    if (int err = create_ring("rdmaemu-srq", entries, wqe_size, srq->memory, fd, srq->ring))
        return err;
    srq->attr.max_wr = entries;
    Srq& made = c.objects.srqs.add(std::move(srq));
    if (!c.nic.register_srq(made)) {
        c.objects.srqs.erase(made.handle);
        return ENOMEM;
    }
    c.pass_fds.push_back(std::move(fd));
    ++pd->users;
    if (xrcd) ++xrcd->users;
    if (cq) ++cq->users;
    ++c.nic.totals().srq;
    r.handle = made.handle;
    r.srqn = made.srqn;
    r.attr = made.attr;
    r.entries = made.ring.entries;
    r.wqe_size = made.ring.entry_size;
    r.ring_bytes = made.memory.size();
    c.log.debug("{} srq#{} created: srqn {:#x} max_wr {} max_sge {} limit {}{}", c.prefix,
                made.handle, made.srqn, a.max_wr, a.max_sge, a.srq_limit,
                xrcd ? fmt::format(" xrc domain {} cq#{}", xrcd->xrcd->id, cq->handle) : "");
    return 0;
}

} // namespace

int create_srq(VerbContext& c, const ipc::CreateSrqReq& q, ipc::CreateSrqReply& r) {
    Pd* pd = c.objects.pds.get(q.pd);
    if (!pd) return EINVAL;
    return make_srq(c, pd, q.attr, IBV_SRQT_BASIC, nullptr, nullptr, r);
}

int create_srq_ex(VerbContext& c, const ipc::CreateSrqExReq& q, ipc::CreateSrqReply& r) {
    Pd* pd = c.objects.pds.get(q.pd);
    if (!pd) return EINVAL;
    if (q.srq_type == IBV_SRQT_BASIC)
        return make_srq(c, pd, q.attr, IBV_SRQT_BASIC, nullptr, nullptr, r);
    if (q.srq_type == IBV_SRQT_TM) {
        Cq* cq = c.objects.cqs.get(q.cq);
        if (!cq) return EINVAL;
        if (q.max_num_tags == 0 || q.max_num_tags > ipc::kTmMaxNumTags ||
            q.max_ops > ipc::kTmMaxOps)
            return EINVAL;
        if (int err = make_srq(c, pd, q.attr, IBV_SRQT_TM, nullptr, cq, r)) return err;
        Srq& srq = *c.objects.srqs.get(r.handle);
        srq.tm = std::make_unique<TagMatching>();
        srq.tm->max_num_tags = q.max_num_tags;
        srq.tm->max_ops = q.max_ops;
        c.log.debug("{} srq#{} tag matching: {} tags", c.prefix, srq.handle, q.max_num_tags);
        return 0;
    }
    if (q.srq_type != IBV_SRQT_XRC) return EINVAL;
    XrcdHandle* xrcd = c.objects.xrcds.get(q.xrcd);
    Cq* cq = c.objects.cqs.get(q.cq);
    if (!xrcd || !cq) return EINVAL;
    return make_srq(c, pd, q.attr, IBV_SRQT_XRC, xrcd, cq, r);
}

int srq_ops(VerbContext& c, const ipc::SrqOpReq& q, ipc::SrqOpReply& r) {
    Srq* srq = c.objects.srqs.get(q.srq);
    if (!srq || !srq->tm) return EINVAL;
    if (q.flags & ~uint32_t(IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC)) return EINVAL;
    TagMatching& tm = *srq->tm;
    ibv_wc wc{};
    wc.wr_id = q.wr_id;
    wc.status = IBV_WC_SUCCESS;
    TmTag tag;
    switch (q.opcode) {
    case IBV_WR_TAG_ADD: {
        if (q.num_sge > ipc::kTmMaxSge) return EINVAL;
        if (tm.tags.size() >= tm.max_num_tags) return ENOMEM;
        tag.tag = q.tag;
        tag.mask = q.mask;
        tag.recv_wr_id = q.recv_wr_id;
        emu::ipc::Sge sge{q.sge.addr, q.sge.length, q.sge.lkey};
        if (q.num_sge && resolve_local(c.nic, srq->pd, &sge, 1, IBV_ACCESS_LOCAL_WRITE, tag.local,
                                       &tag.capacity) != IBV_WC_SUCCESS)
            return EINVAL;
        wc.opcode = IBV_WC_TM_ADD;
        break;
    }
    case IBV_WR_TAG_DEL:
        // A tag a message consumed meanwhile: the app learns it from the completion.
        if (tm.tags.erase(q.handle) == 0) wc.status = IBV_WC_TM_ERR;
        wc.opcode = IBV_WC_TM_DEL;
        break;
    case IBV_WR_TAG_SYNC:
        wc.opcode = IBV_WC_TM_SYNC;
        break;
    default:
        return EINVAL;
    }
    if (q.flags & IBV_OPS_TM_SYNC) {
        tm.synced = q.unexpected_cnt;
        if (tm.synced == tm.unexpected)
            for (auto& [handle, t] : tm.tags)
                t.enabled = true;
    }
    if (q.opcode == IBV_WR_TAG_ADD) {
        tag.enabled = tm.synced == tm.unexpected;
        r.handle = tm.next_handle++;
        if (tm.next_handle == 0) tm.next_handle = 1;
        tm.tags[r.handle] = std::move(tag);
    }
    c.log.trace("{} srq#{} tag op {} handle {} unexpected {}/{}", c.prefix, srq->handle, q.opcode,
                q.opcode == IBV_WR_TAG_ADD ? r.handle : q.handle, tm.synced, tm.unexpected);
    bool signaled = (q.flags & IBV_OPS_SIGNALED) || wc.status != IBV_WC_SUCCESS;
    if (signaled)
        if (DataPath* dp = c.nic.data_path()) dp->complete(*srq->cq, wc);
    return 0;
}

int modify_srq(VerbContext& c, const ipc::ModifySrqReq& q, ipc::Empty&) {
    Srq* srq = c.objects.srqs.get(q.srq);
    if (!srq) return EINVAL;
    if (q.mask & ~uint32_t(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) return EINVAL;
    uint32_t max_wr = srq->attr.max_wr;
    // The ring was sized at creation; growing it is not supported (the device does not
    // claim IBV_DEVICE_SRQ_RESIZE), shrinking below it changes nothing.
    if (q.mask & IBV_SRQ_MAX_WR) {
        if (q.attr.max_wr == 0 || q.attr.max_wr > srq->ring.entries) return EINVAL;
    }
    uint32_t limit = q.mask & IBV_SRQ_LIMIT ? q.attr.srq_limit : srq->attr.srq_limit;
    if (limit > max_wr) return EINVAL;
    srq->attr.max_wr = max_wr;
    srq->attr.srq_limit = limit;
    c.log.debug("{} srq#{} modified: max_wr {} limit {}", c.prefix, srq->handle, max_wr, limit);
    return 0;
}

int query_srq(VerbContext& c, const ipc::HandleReq& q, ipc::QuerySrqReply& r) {
    Srq* srq = c.objects.srqs.get(q.handle);
    if (!srq) return EINVAL;
    r.attr = srq->attr;
    return 0;
}

void free_srq(Nic& nic, SessionObjects& objs, Srq& srq) {
    nic.unregister_srq(srq);
    --srq.pd->users;
    if (srq.xrcd) --srq.xrcd->users;
    if (srq.cq) --srq.cq->users;
    --nic.totals().srq;
    objs.srqs.erase(srq.handle);
}

int destroy_srq(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    // Not while QPs receive through it. (XRC_RECV QPs name an XRC SRQ per message: it may go at
    // any time, and their later requests for it are refused.)
    static constexpr DestroyRule<Srq> rule{"SRQ", &Srq::users, "QP(s) receiving through it", "srq",
                                           "destroyed"};
    return destroy_unheld(c, c.objects.srqs, q.handle, rule,
                          [&](Srq& srq) { free_srq(c.nic, c.objects, srq); });
}

} // namespace nicsim
