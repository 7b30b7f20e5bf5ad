// An application process's memory, reached through the descriptor of its /proc/<pid>/mem that
// the process opened itself and handed to the NIC (the library does so with its first request
// from each process). The descriptor is bound to the address space it was opened on, not to a
// pid: once that process exits or execs, every access fails with EFAULT, and a newcomer that
// reuses the pid is never reached. It reaches exactly what the process could reach itself.
#pragma once

#include "memory.h"
#include "support/unique_fd.h"

#include <memory>
#include <sys/types.h>

namespace nicsim {

class ProcessMemory final : public Memory {
  public:
    // `fd`: an open /proc/<pid>/mem (read-write) of process `pid` (for logs only).
    ProcessMemory(UniqueFd fd, pid_t pid) : fd_(std::move(fd)), pid_(pid) {}

    // The NIC's own memory (device memory lives in its mappings); should /proc/self/mem not
    // open, every access to it fails.
    static const std::shared_ptr<ProcessMemory>& nic();
    // Whether `fd` is a /proc/<pid>/mem file; 0 or the errno that says why not.
    static int check_descriptor(int fd);

    int read(uint64_t addr, void* dst, size_t len) override;
    int write(uint64_t addr, const void* src, size_t len) override;
    const char* engine() const override { return "process"; }
    pid_t pid() const { return pid_; }

  private:
    UniqueFd fd_;
    pid_t pid_;
};

} // namespace nicsim
