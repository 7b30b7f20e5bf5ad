#include "diag/error_log.h"

#include "support/json_escape.h"

#include <spdlog/fmt/chrono.h>
#include <spdlog/fmt/fmt.h>

namespace nicsim {

const char* reason_kind_name(emu::ipc::ReasonKind kind) {
    switch (kind) {
    case emu::ipc::ReasonKind::Completion:
        return "completion";
    case emu::ipc::ReasonKind::Refusal:
        return "refusal";
    case emu::ipc::ReasonKind::Event:
        return "event";
    case emu::ipc::ReasonKind::Notice:
        return "notice";
    }
    return "?";
}

void ErrorLog::add(emu::ipc::ReasonKind kind, std::string who, uint32_t qpn, std::string text) {
    if (entries_.size() == kKept) entries_.pop_front();
    entries_.push_back(
        {std::chrono::system_clock::now(), kind, std::move(who), qpn, std::move(text)});
    ++total_;
}

std::string ErrorLog::json() const {
    std::string j = fmt::format("{{\"total\":{},\"recent\":[", total_);
    bool first = true;
    for (const Entry& e : entries_) {
        auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(e.when.time_since_epoch()) % 1000;
        j += fmt::format(
            "{}{{\"time\":\"{:%Y-%m-%dT%H:%M:%S}.{:03}\",\"kind\":\"{}\",\"who\":\"{}\","
            "\"qpn\":\"{:#x}\",\"text\":\"{}\"}}",
            first ? "" : ",", fmt::localtime(std::chrono::system_clock::to_time_t(e.when)),
            ms.count(), reason_kind_name(e.kind), json_escape(e.who), e.qpn, json_escape(e.text));
        first = false;
    }
    return j + "]}";
}

} // namespace nicsim
