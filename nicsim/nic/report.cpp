#include "nic/report.h"

#include "nic/nic.h"
#include "objects/session_objects.h"

#include <spdlog/fmt/fmt.h>

namespace nicsim {

uint32_t report(Nic& nic, spdlog::logger& log, SessionObjects* owner, emu::ipc::ReasonKind kind,
                uint32_t qpn, const std::string& headline, const std::string& text) {
    const std::string who = owner ? owner->label : std::string();
    std::string line = (headline.empty() ? "" : headline + ": ") + text;
    log.info("{}{}{}", who.empty() ? "" : who + ": ", qpn ? fmt::format("qp {:#x}: ", qpn) : "",
             line);
    nic.errors().add(kind, who, qpn, std::move(line));
    if (!owner || !owner->reasons) return 0;
    return emu::ipc::write_reason(*owner->reasons, &owner->last_reason_id, kind, qpn, text);
}

} // namespace nicsim
