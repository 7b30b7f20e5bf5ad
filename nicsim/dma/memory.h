// An address space the NIC moves bytes in and out of. Every segment of a transfer names the
// memory it lies in, so no transfer can reach memory other than what its MR was made over.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nicsim {

class Memory {
  public:
    virtual ~Memory() = default;
    // Copies `len` bytes at `addr` of this memory. 0, or EFAULT when part of the range is not
    // there (unmapped since registration, or the process is gone): never a crash.
    virtual int read(uint64_t addr, void* dst, size_t len) = 0;
    virtual int write(uint64_t addr, const void* src, size_t len) = 0;
    // How the NIC reaches it, for status and logs.
    virtual const char* engine() const = 0;
    // Bytes of it the NIC reaches with plain memory copies (a shared mapping).
    virtual uint64_t shared_bytes() const { return 0; }
};

} // namespace nicsim
