#include "diag/error_log.h"

#include <nlohmann/json.hpp>

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

Json ErrorLog::json() const {
    Json recent = Json::array();
    for (const Entry& e : entries_) {
        auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(e.when.time_since_epoch()) % 1000;
        recent.push_back(
            {{"time", fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}",
                                  fmt::localtime(std::chrono::system_clock::to_time_t(e.when)),
                                  ms.count())},
             {"kind", reason_kind_name(e.kind)},
             {"who", e.who},
             {"qpn", fmt::format("{:#x}", e.qpn)},
             {"text", e.text}});
    }
    return {{"total", total_}, {"recent", std::move(recent)}};
}

} // namespace nicsim
