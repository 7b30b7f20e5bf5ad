// Saying why on the app's stderr (RDMAEMU_EXPLAIN=1, or `rdmaemu run --explain`): each error
// completion, refused verb and async event gets one line naming the object and the rule, at the
// moment the app sees it, and a QP that waits without end (RNR NAKs) gets a notice. The NIC's
// reasons come from the session's reason ring (emu/ipc/reasons.h); the library's own refusals
// are worded here. With the verbs trace on, the same lines go to the trace too ("explain").
// Nothing is done on a successful call: the checks below are one branch when it is off.
#pragma once

#include "emu/ipc/protocol.h"
#include "emu/ipc/reasons.h"

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace verbs {

struct EmuSession;
struct EmuCq;

namespace explain {

// RDMAEMU_EXPLAIN=1 or the trace: worth looking up reasons.
bool wanted();

// An error completion of `cq` (`reason`: its CQE's). Flushes are said once per cause.
void completion(EmuSession& s, EmuCq& cq, const ibv_wc& wc, uint32_t reason);
// The NIC refused request `op` with `err` (`reason`: the reply's).
void refused_by_nic(EmuSession& s, emu::ipc::Op op, int err, uint32_t reason);
// The library refused `verb` with `err` before asking the NIC.
void refused(const char* verb, int err, uint32_t qpn, const std::string& why);
// An async event as ibv_get_async_event returns it.
void event(EmuSession& s, const ibv_async_event& event, uint32_t qpn, uint32_t reason);
// Notices the NIC wrote since the last look (a poll of any CQ of the session looks).
void notices(EmuSession& s);

} // namespace explain
} // namespace verbs
