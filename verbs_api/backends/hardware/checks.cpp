#include "backends/hardware/checks.h"

#include "emu/access_flags.h"
#include "emu/qp_state_rules.h"
#include "trace/trace.h"

#include <cstdio>
#include <string>

namespace verbs::hardware {
namespace {

void warn(const std::string& text) {
    std::fprintf(stderr, "rdmaemu: warning: %s\n", text.c_str());
    trace::write_line("warn", text);
}

std::string hex(unsigned value) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", value);
    return buf;
}

} // namespace

void check_mr_access(const char* verb, int access) {
    if (emu::check_mr_access(static_cast<uint32_t>(access)) == 0) return;
    warn(std::string(verb) + ": access flags " + hex(unsigned(access)) +
         " are invalid (unknown bits, or remote write/atomic without IBV_ACCESS_LOCAL_WRITE); "
         "the emulator fails this with EINVAL");
}

void check_modify_qp(const ibv_qp* qp, const ibv_qp_attr* attr, int attr_mask) {
    auto mask = static_cast<uint32_t>(attr_mask);
    ibv_qp_state next = (mask & IBV_QP_STATE) ? attr->qp_state : qp->state;
    if (emu::modify_is_ok(qp->qp_type, qp->state, next, mask)) return;
    std::string text = "ibv_modify_qp(qpn " + std::to_string(qp->qp_num) +
                       "): " + emu::qp_state_name(qp->state) + " -> " + emu::qp_state_name(next) +
                       " with attr_mask " + hex(mask);
    emu::TransitionRule rule = emu::transition_rule(qp->qp_type, qp->state, next);
    if (!rule.valid) {
        text += " is not a legal transition for this QP type";
    } else {
        if (uint32_t missing = rule.required & ~mask) text += ", missing required " + hex(missing);
        if (uint32_t extra = mask & ~(rule.required | rule.optional | IBV_QP_STATE))
            text += ", not allowed " + hex(extra);
    }
    warn(text + " (IBA 11.2.1 / 10.3); the emulator fails this with EINVAL");
}

} // namespace verbs::hardware
