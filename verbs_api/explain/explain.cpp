#include "explain/explain.h"

#include "backends/emulated/emu_objects.h"
#include "emu/verbs_names.h"
#include "trace/trace.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace verbs::explain {

namespace names = emu::names;

namespace {

bool on_stderr() {
    static const bool on = [] {
        const char* v = std::getenv("RDMAEMU_EXPLAIN");
        return v && std::strcmp(v, "1") == 0;
    }();
    return on;
}

void say(const std::string& text) {
    int saved = errno; // explaining must not change what the app sees
    if (on_stderr()) std::fprintf(stderr, "rdmaemu: %s\n", text.c_str());
    trace::write_line("explain", text);
    errno = saved;
}

std::string hex(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", v);
    return buf;
}

const emu::ipc::ReasonRing* ring_of(const EmuSession& s) {
    return s.doorbell_page.data ? emu::ipc::reason_ring(s.doorbell_page.data) : nullptr;
}

// The reason's text, or why there is none to show.
std::string text_of(const EmuSession& s, uint32_t id) {
    emu::ipc::Reason r;
    if (id == 0) return "(the NIC gave no reason)";
    const emu::ipc::ReasonRing* ring = ring_of(s);
    if (!ring || !emu::ipc::read_reason(*ring, id, &r))
        return "(its reason is no longer kept: see rdmaemu status)";
    return r.text;
}

std::string errno_name(int err) {
    const char* name = strerrorname_np(err);
    return name ? name : std::to_string(err);
}

// The verb a request serves, as the app called it.
const char* verb_of(emu::ipc::Op op) {
    using emu::ipc::Op;
    switch (op) {
    case Op::AllocPd:
        return "ibv_alloc_pd";
    case Op::DeallocPd:
        return "ibv_dealloc_pd";
    case Op::RegMr:
        return "ibv_reg_mr";
    case Op::ReregMr:
        return "ibv_rereg_mr";
    case Op::DeregMr:
        return "ibv_dereg_mr";
    case Op::CreateCq:
        return "ibv_create_cq";
    case Op::ResizeCq:
        return "ibv_resize_cq";
    case Op::DestroyCq:
        return "ibv_destroy_cq";
    case Op::CreateQp:
        return "ibv_create_qp";
    case Op::ModifyQp:
        return "ibv_modify_qp";
    case Op::QueryQp:
        return "ibv_query_qp";
    case Op::DestroyQp:
        return "ibv_destroy_qp";
    case Op::CreateSrq:
    case Op::CreateSrqEx:
        return "ibv_create_srq";
    case Op::ModifySrq:
        return "ibv_modify_srq";
    case Op::DestroySrq:
        return "ibv_destroy_srq";
    case Op::CreateAh:
        return "ibv_create_ah";
    case Op::DestroyAh:
        return "ibv_destroy_ah";
    case Op::AttachMcast:
        return "ibv_attach_mcast";
    case Op::DetachMcast:
        return "ibv_detach_mcast";
    default:
        return emu::ipc::op_name(op);
    }
}

} // namespace

bool wanted() {
    return on_stderr() || trace::enabled();
}

void completion(EmuSession& s, EmuCq& cq, const ibv_wc& wc, uint32_t reason) {
    std::string head = names::wc_status(wc.status) + " for wr_id " + std::to_string(wc.wr_id) +
                       " on qp " + hex(wc.qp_num) + ": ";
    // A flush follows from the QP's error: said once for its cause, not for every WR, and not
    // at all right after the error that caused it.
    bool flush = wc.status == IBV_WC_WR_FLUSH_ERR;
    if (flush && reason && reason == cq.last_reason_said) return;
    cq.last_reason_said = reason;
    say(head + (flush ? "flushed, the QP is in ERR: " : "") + text_of(s, reason));
}

void refused_by_nic(EmuSession& s, emu::ipc::Op op, int err, uint32_t reason) {
    emu::ipc::Reason r;
    const emu::ipc::ReasonRing* ring = ring_of(s);
    std::string head = std::string(verb_of(op)) + " refused (" + errno_name(err) + "): ";
    if (reason && ring && emu::ipc::read_reason(*ring, reason, &r))
        return say(head + (r.qpn ? "qp " + hex(r.qpn) + ": " : "") + r.text);
    say(head + text_of(s, reason));
}

void refused(const char* verb, int err, uint32_t qpn, const std::string& why) {
    if (!wanted()) return;
    say(std::string(verb) + " refused (" + errno_name(err) +
        "): " + (qpn ? "qp " + hex(qpn) + ": " : "") + why);
}

void event(EmuSession& s, const ibv_async_event& ev, uint32_t qpn, uint32_t reason) {
    std::string head = names::event_type(ev.event_type) + (qpn ? " on qp " + hex(qpn) : "");
    if (reason == 0) return say(head);
    say(head + ": " + text_of(s, reason));
}

void notices(EmuSession& s) {
    const emu::ipc::ReasonRing* ring = ring_of(s);
    if (!ring) return;
    uint32_t last = ring->last.load(std::memory_order_acquire);
    uint32_t seen = s.reasons_seen.load(std::memory_order_relaxed);
    if (last == seen || !s.reasons_seen.compare_exchange_strong(seen, last)) return;
    // Only the records still in the ring; the NIC's ids never run backwards.
    uint32_t from = last - seen > emu::ipc::kReasonRecords ? last - emu::ipc::kReasonRecords : seen;
    for (uint32_t id = from + 1; id != last + 1; ++id) {
        emu::ipc::Reason r;
        if (emu::ipc::read_reason(*ring, id, &r) && r.kind == emu::ipc::ReasonKind::Notice)
            say((r.qpn ? "qp " + hex(r.qpn) + ": " : "") + r.text);
    }
}

} // namespace verbs::explain
