// The extended CQ's polling interface (ibv_start_poll / ibv_next_poll / ibv_end_poll and the
// ibv_wc_read_* accessors), over the same shared ring as ibv_poll_cq.
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/ops.h"
#include "explain/explain.h"

#include <cstring>

#include <cerrno>
#include <sched.h>
#include <unistd.h>

namespace verbs {
namespace ipc = emu::ipc;

namespace {

const ibv_wc& wc_of(ibv_cq_ex* cq) {
    return emu_cq(cq)->current->wc;
}

// Loads the CQE at the ring's consumer index, or returns ENOENT (with nothing loaded).
int load(EmuCq& c) {
    ShimRing& r = c.ring;
    c.current = nullptr;
    for (;;) {
        uint32_t available = r.header->producer.load(std::memory_order_acquire) - r.index;
        if (available == 0 || available > r.entries) return ENOENT;
        c.current = reinterpret_cast<const ipc::Cqe*>(r.slot(r.index));
        if (!forgotten_cqe(c, r.index, c.current->wc.qp_num)) break;
        ++r.index; // a destroyed QP's (cq_clean.cpp)
        r.header->consumer.store(r.index, std::memory_order_release);
    }
    c.ex.wr_id = c.current->wc.wr_id;
    c.ex.status = c.current->wc.status;
    if (c.ex.status != IBV_WC_SUCCESS && explain::wanted()) {
        ibv_wc wc;
        std::memcpy(&wc, &c.current->wc, sizeof wc);
        explain::completion(session(c.ex.context), c, wc, c.current->reason);
    }
    return 0;
}

int start_poll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
    if (attr->comp_mask) return EINVAL;
    EmuCq& c = *emu_cq(cq);
    c.poll_mutex.lock(); // held until end_poll, as rdma-core providers hold their CQ lock
    if (int err = load(c)) {
        c.poll_mutex.unlock();
        if (explain::wanted()) explain::notices(session(c.ex.context));
        empty_poll_backoff(c);
        return err;
    }
    c.empty_polls = 0;
    return 0;
}

// Each CQE loaded by start_poll/next_poll is consumed by the next call.
int next_poll(ibv_cq_ex* cq) {
    EmuCq& c = *emu_cq(cq);
    if (c.current) ++c.ring.index;
    return load(c);
}

void end_poll(ibv_cq_ex* cq) {
    EmuCq& c = *emu_cq(cq);
    if (c.current) ++c.ring.index;
    c.ring.header->consumer.store(c.ring.index, std::memory_order_release);
    c.current = nullptr;
    c.poll_mutex.unlock();
}

ibv_wc_opcode read_opcode(ibv_cq_ex* cq) {
    return wc_of(cq).opcode;
}
uint32_t read_vendor_err(ibv_cq_ex* cq) {
    return wc_of(cq).vendor_err;
}
uint32_t read_byte_len(ibv_cq_ex* cq) {
    return wc_of(cq).byte_len;
}
__be32 read_imm_data(ibv_cq_ex* cq) {
    return wc_of(cq).imm_data;
}
uint32_t read_qp_num(ibv_cq_ex* cq) {
    return wc_of(cq).qp_num;
}
uint32_t read_src_qp(ibv_cq_ex* cq) {
    return wc_of(cq).src_qp;
}
unsigned int read_wc_flags(ibv_cq_ex* cq) {
    return wc_of(cq).wc_flags;
}
uint32_t read_slid(ibv_cq_ex* cq) {
    return wc_of(cq).slid;
}
uint8_t read_sl(ibv_cq_ex* cq) {
    return wc_of(cq).sl;
}
uint8_t read_dlid_path_bits(ibv_cq_ex* cq) {
    return wc_of(cq).dlid_path_bits;
}
uint64_t read_completion_ts(ibv_cq_ex* cq) {
    return emu_cq(cq)->current->timestamp;
}
uint64_t read_completion_wallclock_ns(ibv_cq_ex* cq) {
    return emu_cq(cq)->current->wallclock_ns;
}

// The tag of a tag-matching completion (meaningful with IBV_WC_TM_MATCH).
void read_tm_info(ibv_cq_ex* cq, ibv_wc_tm_info* tm_info) {
    tm_info->tag = emu_cq(cq)->current->tm_tag;
    tm_info->priv = emu_cq(cq)->current->tm_priv;
}

} // namespace

void install_cq_ex_ops(ibv_cq_ex& cq) {
    cq.start_poll = start_poll;
    cq.next_poll = next_poll;
    cq.end_poll = end_poll;
    cq.read_opcode = read_opcode;
    cq.read_vendor_err = read_vendor_err;
    cq.read_byte_len = read_byte_len;
    cq.read_imm_data = read_imm_data;
    cq.read_qp_num = read_qp_num;
    cq.read_src_qp = read_src_qp;
    cq.read_wc_flags = read_wc_flags;
    cq.read_slid = read_slid;
    cq.read_sl = read_sl;
    cq.read_dlid_path_bits = read_dlid_path_bits;
    cq.read_completion_ts = read_completion_ts;
    cq.read_completion_wallclock_ns = read_completion_wallclock_ns;
    cq.read_tm_info = read_tm_info;
}

// On a machine of 1 or 2 CPUs the app and the NICs share the cores: an app that keeps finding
// its CQ empty gives the CPU up now and then, or the NIC that would fill it waits for the app's
// time slice to end (tails of milliseconds, bench/README.md). With more CPUs the NICs have
// cores of their own and polling stays a plain memory read, as on hardware; so it does with a
// NIC at real-time priority, which preempts the app the moment it has work (rings.h). Every 64th
// empty poll reads the clock (no syscall) to look for a dead NIC now and then (dead_nic.h).
void empty_poll_backoff(EmuCq& cq) {
    static const bool cores_shared = ::sysconf(_SC_NPROCESSORS_ONLN) <= 2;
    ++cq.empty_polls;
    if (cores_shared && cq.empty_polls >= 64 && !nic_realtime(session(cq.ex.context)))
        sched_yield();
    if (cq.empty_polls % 64 == 0) watch_nic(session(cq.ex.context));
}

} // namespace verbs
