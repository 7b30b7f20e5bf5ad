// The host's recent failures and notices, newest last, for `rdmaemu status`: bounded, and kept
// after the process that caused them is gone (the daemon keeps them until it stops).
#pragma once

#include "emu/ipc/reasons.h"
#include "support/json.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

namespace nicsim {

class ErrorLog {
  public:
    static constexpr size_t kKept = 64;

    struct Entry {
        std::chrono::system_clock::time_point when;
        emu::ipc::ReasonKind kind;
        std::string who; // "session#3 pid 812 (rc_errors)"; empty: no session
        uint32_t qpn;    // 0: not about a QP
        std::string text;
    };

    void add(emu::ipc::ReasonKind kind, std::string who, uint32_t qpn, std::string text);
    const std::deque<Entry>& entries() const { return entries_; }
    uint64_t total() const { return total_; } // all ever added, the forgotten ones included
    // {"total":N,"recent":[{"time":"...","kind":"completion","who":"...","qpn":"0x..","text":"..."}]}
    Json json() const;

  private:
    std::deque<Entry> entries_;
    uint64_t total_ = 0;
};

const char* reason_kind_name(emu::ipc::ReasonKind kind);

} // namespace nicsim
