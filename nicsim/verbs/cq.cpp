#include "nic/device_limits.h"
#include "objects/ring_factory.h"
#include "support/app_socket_pair.h"
#include "verbs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>

namespace nicsim {

int create_comp_channel(VerbContext& c, const ipc::Empty&, ipc::HandleReply& r) {
    if (c.nic.totals().comp_channel >= limits::kMaxCompChannels) return ENOMEM;
    // A socket pair: the app polls/reads its end like the kernel's completion-event fd.
    AppSocketPair pair;
    if (int err = make_app_socket_pair(pair)) return err;
    auto ch = std::make_unique<CompChannel>();
    ch->daemon_end = std::move(pair.nic_end);
    c.pass_fds.push_back(std::move(pair.app_end));
    r.handle = c.objects.channels.add(std::move(ch)).handle;
    ++c.nic.totals().comp_channel;
    c.log.debug("{} channel#{} created", c.prefix, r.handle);
    return 0;
}

void free_comp_channel(Nic& nic, SessionObjects& objs, CompChannel& ch) {
    --nic.totals().comp_channel;
    objs.channels.erase(ch.handle);
}

int destroy_comp_channel(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    static constexpr DestroyRule<CompChannel> rule{"completion channel", &CompChannel::users,
                                                   "CQ(s) reporting to it", "channel", "destroyed"};
    return destroy_unheld(c, c.objects.channels, q.handle, rule,
                          [&](CompChannel& ch) { free_comp_channel(c.nic, c.objects, ch); });
}

namespace {

// A CQ ring holding at least `cqe` completions; its memfd goes into `fds`.
int make_cq_ring(Cq& cq, uint32_t cqe, std::vector<UniqueFd>& fds) {
    uint32_t entries = emu::ipc::round_up_pow2(cqe);
    SharedMemory mem;
    UniqueFd fd;
    Ring ring;
    if (int err = create_ring("rdmaemu-cq", entries, sizeof(emu::ipc::Cqe), mem, fd, ring))
        return err;
    cq.memory = std::move(mem);
    cq.ring = ring;
    cq.cqe = entries;
    fds.push_back(std::move(fd));
    return 0;
}

} // namespace

int create_cq(VerbContext& c, const ipc::CreateCqReq& q, ipc::CreateCqReply& r) {
    if (q.cqe < 1 || static_cast<uint32_t>(q.cqe) > limits::kMaxCqe) return EINVAL;
    if (q.comp_vector < 0 || q.comp_vector >= limits::kNumCompVectors) return EINVAL;
    CompChannel* ch = nullptr;
    if (q.channel) {
        ch = c.objects.channels.get(q.channel);
        if (!ch) return EINVAL;
    }
    if (c.nic.totals().cq >= limits::kMaxCq) return ENOMEM;
    if (int err = over_share(c, emu::Share::Cq)) return err;
    auto cq = std::make_unique<Cq>();
    if (int err = make_cq_ring(*cq, static_cast<uint32_t>(q.cqe), c.pass_fds)) return err;
    cq->channel = ch;
    cq->comp_vector = q.comp_vector;
    cq->pid = c.pid;
    cq->owner = &c.objects;
    Cq& made = c.objects.cqs.add(std::move(cq));
    if (ch) ++ch->users;
    ++c.nic.totals().cq;
    c.nic.shares().charge(emu::Share::Cq, made.pid);
    r.handle = made.handle;
    r.cqe = made.cqe;
    r.ring_bytes = made.memory.size();
    c.log.debug("{} cq#{} created: cqe {}{}", c.prefix, made.handle, made.cqe,
                ch ? fmt::format(" channel#{}", ch->handle) : "");
    return 0;
}

int resize_cq(VerbContext& c, const ipc::ResizeCqReq& q, ipc::ResizeCqReply& r) {
    Cq* cq = c.objects.cqs.get(q.cq);
    if (!cq) return EINVAL;
    if (q.cqe < 1 || static_cast<uint32_t>(q.cqe) > limits::kMaxCqe) return EINVAL;
    const Ring& old = cq->ring;
    uint32_t consumer = old.header->consumer.load(std::memory_order_acquire);
    uint32_t producer = old.header->producer.load(std::memory_order_relaxed);
    uint32_t pending = producer - consumer;
    if (pending > old.entries) pending = old.entries; // the app scribbled on its index
    // Work requests still in flight will complete into this CQ too.
    uint64_t in_flight = 0;
    c.objects.qps.for_each([&](const Qp& qp) {
        if (qp.send_cq != cq) return;
        uint32_t unfetched =
            qp.sq.header->producer.load(std::memory_order_acquire) - qp.req.fetch_index;
        in_flight += qp.req.ops.size() + std::min(unfetched, qp.sq.entries);
    });
    if (static_cast<uint64_t>(q.cqe) < pending + in_flight) return EINVAL; // would overrun
    Cq fresh;
    if (int err = make_cq_ring(fresh, static_cast<uint32_t>(q.cqe), c.pass_fds)) return err;
    // Move the completions the app has not polled yet into the new ring.
    for (uint32_t i = 0; i < pending; ++i)
        std::memcpy(fresh.ring.slot(i), old.slot(consumer + i), sizeof(emu::ipc::Cqe));
    fresh.ring.header->producer.store(pending, std::memory_order_release);
    cq->memory = std::move(fresh.memory);
    cq->ring = fresh.ring;
    cq->cqe = fresh.cqe;
    r.cqe = cq->cqe;
    r.ring_bytes = cq->memory.size();
    c.log.debug("{} cq#{} resized to {}", c.prefix, cq->handle, cq->cqe);
    return 0;
}

void free_cq(Nic& nic, SessionObjects& objs, Cq& cq) {
    if (cq.channel) --cq.channel->users;
    --nic.totals().cq;
    nic.shares().release(emu::Share::Cq, cq.pid);
    objs.cqs.erase(cq.handle);
}

int destroy_cq(VerbContext& c, const ipc::HandleReq& q, ipc::Empty&) {
    static constexpr DestroyRule<Cq> rule{
        "CQ", &Cq::users, "QP(s), SRQ(s) or WQ(s) completing to it", "cq", "destroyed"};
    return destroy_unheld(c, c.objects.cqs, q.handle, rule,
                          [&](Cq& cq) { free_cq(c.nic, c.objects, cq); });
}

} // namespace nicsim
