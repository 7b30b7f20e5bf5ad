// Per-process shares of the NIC's objects (nicsimd --max-per-process): how many QPs, CQs, MRs
// and device contexts one process may hold, so that one client cannot take all of a device's
// objects and lock every other out. A process is counted by the pid that made each object (the
// objects of a fork() child's requests are its own). A create beyond the share is refused with
// EAGAIN, the kernel's answer when a process's RDMA cgroup (rdma.max: hca_object, hca_handle)
// is used up; the device-wide limits stay ENOMEM.
#pragma once

#include "emu/share_limits.h"
#include "support/log_rate_limit.h"

#include <spdlog/logger.h>

#include <array>
#include <string_view>
#include <sys/types.h>
#include <unordered_map>

namespace nicsim {

class ProcessShares {
  public:
    explicit ProcessShares(const emu::ShareLimits& limits) : limits_(limits) {}

    // Whether process `pid` holds its whole share of `kind`, so that one more must be refused;
    // then `log` says so and which limit (`who` names the requester, e.g. "session#3"). The
    // daemon is one thread: nothing is made between this check and charge().
    bool refuses(emu::Share kind, pid_t pid, spdlog::logger& log, std::string_view who);
    // One object of `kind` made for / freed by process `pid`.
    void charge(emu::Share kind, pid_t pid);
    void release(emu::Share kind, pid_t pid);
    uint32_t held(emu::Share kind, pid_t pid) const;

  private:
    using Counts = std::array<uint32_t, emu::kShareKinds>;
    emu::ShareLimits limits_;
    std::unordered_map<pid_t, Counts> held_; // processes holding anything
    LogRateLimit refusals_{10};
};

} // namespace nicsim
