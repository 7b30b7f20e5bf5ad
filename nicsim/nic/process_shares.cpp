#include "nic/process_shares.h"

namespace nicsim {

namespace {

const char* plural(emu::Share kind) {
    switch (kind) {
    case emu::Share::Qp:
        return "QPs";
    case emu::Share::Cq:
        return "CQs";
    case emu::Share::Mr:
        return "MRs";
    case emu::Share::Context:
        return "device contexts";
    }
    return "objects";
}

} // namespace

bool ProcessShares::refuses(emu::Share kind, pid_t pid, spdlog::logger& log, std::string_view who) {
    const uint32_t max = limits_.of(kind);
    if (max == 0 || held(kind, pid) < max) return false;
    std::string suffix;
    if (refusals_.allow("refusals", suffix))
        log.warn("{} pid {} holds its share of {} {} (--max-per-process {}={}): one more is "
                 "refused with EAGAIN{}",
                 who, pid, max, plural(kind), emu::share_name(kind), max, suffix);
    return true;
}

void ProcessShares::charge(emu::Share kind, pid_t pid) {
    if (limits_.of(kind)) ++held_[pid][static_cast<size_t>(kind)];
}

void ProcessShares::release(emu::Share kind, pid_t pid) {
    auto it = held_.find(pid);
    if (it == held_.end()) return;
    uint32_t& n = it->second[static_cast<size_t>(kind)];
    if (n) --n;
    for (uint32_t c : it->second)
        if (c) return;
    held_.erase(it); // a process that holds nothing leaves no entry behind
}

uint32_t ProcessShares::held(emu::Share kind, pid_t pid) const {
    auto it = held_.find(pid);
    return it == held_.end() ? 0 : it->second[static_cast<size_t>(kind)];
}

} // namespace nicsim
