// Saying why: one failure or notice, with the object and the rule in its text, goes to the NIC's
// log (info, the default level), to the host's recent errors (`rdmaemu status`) and to the reason
// ring of the session that owns the object, where the app finds it by the id this returns
// (emu/ipc/reasons.h). Called only when something failed: the text is built on that path alone.
#pragma once

#include "emu/ipc/reasons.h"

#include <spdlog/logger.h>

#include <cstdint>
#include <string>

namespace nicsim {

class Nic;
struct SessionObjects;

// `owner`: the session whose object it is (nullptr: none); `qpn` the QP it is about (0: none);
// `headline` what happened, for the log and status only ("ModifyQp refused (EINVAL)",
// "IBV_WC_REM_ACCESS_ERR for wr_id 7"; the app knows it already), `text` why. Returns the id of
// the session's record, 0 when there is no session to tell.
uint32_t report(Nic& nic, spdlog::logger& log, SessionObjects* owner, emu::ipc::ReasonKind kind,
                uint32_t qpn, const std::string& headline, const std::string& text);

} // namespace nicsim
