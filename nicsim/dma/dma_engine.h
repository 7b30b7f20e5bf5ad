// How the NIC reaches application memory. The transport works on segments of the owning
// process's address space; an engine moves the bytes. A fault (memory unmapped since
// registration) is reported as EFAULT, never a crash: the transport turns it into the
// completion status hardware would report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <sys/types.h>

namespace nicsim {

struct DmaSegment {
    uint64_t addr; // in the owner's address space
    size_t length;
    // The process whose memory this is, when not the one the transfer names: an MR's pid,
    // which for device memory is the NIC's own. 0: the transfer's `owner`.
    pid_t owner = 0;
};

class DmaEngine {
  public:
    virtual ~DmaEngine() = default;
    // Copies the bytes of `src` (in order) into dst; their lengths add up to `len`. `owner` is
    // the process of segments that name none.
    virtual int read(pid_t owner, std::span<const DmaSegment> src, uint8_t* dst, size_t len) = 0;
    // Copies `len` bytes from src into the segments of `dst` (in order).
    virtual int write(pid_t owner, std::span<const DmaSegment> dst, const uint8_t* src,
                      size_t len) = 0;
};

// process_vm_readv/writev on the owner: works for any memory (heap, stack, mmap). Apps allow
// it with PR_SET_PTRACER where Yama restricts ptrace (the library does so at open).
class ProcessVmDma final : public DmaEngine {
  public:
    int read(pid_t owner, std::span<const DmaSegment> src, uint8_t* dst, size_t len) override;
    int write(pid_t owner, std::span<const DmaSegment> dst, const uint8_t* src,
              size_t len) override;
};

} // namespace nicsim
