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

} // namespace

void check_mr_access(const char* verb, int access) {
    std::string why = emu::mr_access_refusal(static_cast<uint32_t>(access));
    if (!why.empty())
        warn(std::string(verb) + ": " + why + "; the emulator fails this with EINVAL");
}

void check_modify_qp(const ibv_qp* qp, const ibv_qp_attr* attr, int attr_mask) {
    auto mask = static_cast<uint32_t>(attr_mask);
    ibv_qp_state next = (mask & IBV_QP_STATE) ? attr->qp_state : qp->state;
    std::string why = emu::modify_refusal(qp->qp_type, qp->state, next, mask);
    if (why.empty()) return;
    warn("ibv_modify_qp(qp " + trace::qpn_text(qp->qp_num) + "): " + why +
         "; the emulator fails this with EINVAL");
}

} // namespace verbs::hardware
