#include "dispatch.h"

#include "nic/report.h"
#include "session.h"
#include "verbs/verbs.h"

#include <spdlog/fmt/fmt.h>

#include <array>
#include <cstring>
#include <type_traits>

namespace nicsim {
namespace {

using emu::ipc::Op;
using Handler = void (*)(Session&, const emu::ipc::Header&, const char*, pid_t);

// A refused verb: said in the log, kept in status, and handed to the app with the reply.
uint32_t explain_refusal(Session& s, Op op, int err, const VerbContext& ctx) {
    const char* name = strerrorname_np(err);
    std::string headline = fmt::format("{} refused ({})", emu::ipc::op_name(op), name ? name : "?");
    std::string why = ctx.reason.empty() ? "no reason recorded" : ctx.reason;
    return report(s.nic(), s.log(), &s.objects(), emu::ipc::ReasonKind::Refusal, ctx.reason_qpn,
                  headline, why);
}

template <Op op, auto Verb>
void run(Session& s, const emu::ipc::Header& h, const char* body, pid_t caller) {
    using Req = typename emu::ipc::Types<op>::Req;
    using Reply = typename emu::ipc::Types<op>::Reply;
    Req req{};
    if constexpr (emu::ipc::body_size<Req>() != 0) std::memcpy(&req, body, sizeof req);
    Reply reply{};
    VerbContext ctx{s.nic(), s.objects(), s.log(),     s.prefix(),
                    caller,  {},          s.net_raw(), s.take_request_fds()};
    int err = Verb(ctx, req, reply);
    uint32_t reason = 0;
    if (err) {
        ctx.pass_fds.clear();
        reason = explain_refusal(s, op, err, ctx);
    }
    s.send_reply(h, err, &reply, err ? 0 : emu::ipc::body_size<Reply>(), ctx.pass_fds, reason);
}

// The handler of an op the session answers itself (ops.h's nullptr) is none.
template <Op op, auto Verb> constexpr Handler handler() {
    if constexpr (std::is_null_pointer_v<decltype(Verb)>)
        return nullptr;
    else
        return &run<op, Verb>;
}

// Indexed by wire value; the CM ops have none here (cm_dispatch.cpp).
constexpr auto make_table() {
    std::array<Handler, static_cast<size_t>(Op::Count)> t{};
#define EMU_IPC_VERB(op_, value_, req_, reply_, verb_) t[value_] = handler<Op::op_, verb_>();
    EMU_IPC_VERB_OPS(EMU_IPC_VERB)
#undef EMU_IPC_VERB
    return t;
}

constexpr auto kTable = make_table();

// Which ops have a verb here, for the check below (with the sanitizers on, comparing function
// addresses is no constant expression).
constexpr auto make_presence() {
    std::array<bool, static_cast<size_t>(Op::Count)> t{};
#define EMU_IPC_VERB(op_, value_, req_, reply_, verb_)                                             \
    t[value_] = !std::is_null_pointer_v<decltype(verb_)>;
    EMU_IPC_VERB_OPS(EMU_IPC_VERB)
#undef EMU_IPC_VERB
    return t;
}

constexpr auto kHasVerb = make_presence();

// Every op but the CM ones and those the session answers (session.cpp) reaches a verb here.
constexpr bool verbs_cover_the_verbs_ops() {
    for (uint16_t op = 1; op < kTable.size(); ++op) {
        auto o = static_cast<Op>(op);
        bool session_answers = o == Op::Hello || o == Op::Status || o == Op::ReopenContext;
        bool wanted = !emu::ipc::is_cm_op(op) && !session_answers;
        if (kHasVerb[op] != wanted) return false;
    }
    return true;
}
static_assert(verbs_cover_the_verbs_ops());

} // namespace

void dispatch_verb(Session& s, const emu::ipc::Header& h, const char* body, pid_t caller) {
    Handler fn = h.op < kTable.size() ? kTable[h.op] : nullptr;
    if (!fn) {
        s.end(std::string("no verb for op ") + emu::ipc::op_name(static_cast<Op>(h.op)));
        return;
    }
    fn(s, h, body, caller);
}

} // namespace nicsim
