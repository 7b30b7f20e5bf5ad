// The memory of each process that used a session (the opener, children after fork(),
// processes that imported the context), as each one handed it to the NIC. A process that
// hands it again (after exec, or a newcomer with a reused pid) replaces its entry; the old one
// lives on, failing every access, for as long as objects made over it do.
#pragma once

#include "process_memory.h"

#include <map>
#include <memory>

namespace nicsim {

class SessionMemories {
  public:
    const std::shared_ptr<ProcessMemory>& bind(pid_t pid, UniqueFd fd) {
        return by_pid_[pid] = std::make_shared<ProcessMemory>(std::move(fd), pid);
    }
    // The memory process `pid` handed over last; null when it never did.
    std::shared_ptr<ProcessMemory> of(pid_t pid) const {
        auto it = by_pid_.find(pid);
        return it == by_pid_.end() ? nullptr : it->second;
    }

  private:
    std::map<pid_t, std::shared_ptr<ProcessMemory>> by_pid_;
};

} // namespace nicsim
