// The memory of each process that used a session (the opener, children after fork(),
// processes that imported the context), as each one handed it to the NIC. A process that
// hands it again (after exec, or a newcomer with a reused pid) gets a new entry; the old one
// stays, failing every access, for the objects still made over it.
#pragma once

#include "process_memory.h"

#include <map>
#include <memory>
#include <vector>

namespace nicsim {

class SessionMemories {
  public:
    ProcessMemory& bind(pid_t pid, UniqueFd fd) {
        all_.push_back(std::make_unique<ProcessMemory>(std::move(fd), pid));
        by_pid_[pid] = all_.back().get();
        return *all_.back();
    }
    // The memory process `pid` handed over last; nullptr when it never did.
    ProcessMemory* of(pid_t pid) const {
        auto it = by_pid_.find(pid);
        return it == by_pid_.end() ? nullptr : it->second;
    }

  private:
    std::vector<std::unique_ptr<ProcessMemory>> all_;
    std::map<pid_t, ProcessMemory*> by_pid_;
};

} // namespace nicsim
