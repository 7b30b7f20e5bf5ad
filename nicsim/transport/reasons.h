// Saying why in the transport: the words for a failed WR or a refused request, and the way out
// through nic/report.h. Used only once something failed.
#pragma once

#include "emu/ipc/reasons.h"
#include "emu/wire/packet.h"
#include "transport_env.h"

#include <cstdint>
#include <string>

namespace nicsim {

struct Qp;
struct SendOp;

namespace transport {

// Reports for `qp` (its owner's session, the log, status); returns the reason id for the CQE or
// event.
uint32_t explain(TransportEnv& env, const Qp& qp, emu::ipc::ReasonKind kind,
                 const std::string& headline, const std::string& text);
// Fails `op` with `status` (it completes in order, the QP then goes to ERR), saying why.
void fail_op(TransportEnv& env, const Qp& qp, SendOp& op, ibv_wc_status status,
             const std::string& why);
// The peer of a connected QP: "127.0.3.1 qp 0x5194f7".
std::string peer_of(const Qp& qp);
// What a NAK of `code` says when the responder said nothing more.
std::string nak_meaning(emu::wire::NakCode code);
// "1 RNR NAK", "10 RNR NAKs".
std::string count_of(uint64_t n, const char* what);
// Whether a streak's count `n` earns a notice: 1, 10, 100, ... (a hang says so, rarely).
constexpr bool notice_due(uint64_t n) {
    for (uint64_t p = 1; p <= n; p *= 10)
        if (p == n) return true;
    return false;
}

} // namespace transport
} // namespace nicsim
