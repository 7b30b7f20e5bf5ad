// How the transport moves bytes between packets and memory: a transfer is a list of segments,
// each in the memory of the MR it was resolved against. A fault becomes EFAULT, never a crash;
// the transport turns it into the completion status hardware would report.
#pragma once

#include "memory.h"

#include <cstddef>
#include <cstdint>
#include <span>

namespace nicsim {

struct DmaSegment {
    uint64_t addr = 0; // in `memory`
    size_t length = 0;
    Memory* memory = nullptr; // lives as long as the session of the MR it came from
};

class DmaEngine {
  public:
    virtual ~DmaEngine() = default;
    // Copies the bytes of `src` (in order) into dst; their lengths add up to `len`.
    virtual int read(std::span<const DmaSegment> src, uint8_t* dst, size_t len) = 0;
    // Copies `len` bytes from src into the segments of `dst` (in order).
    virtual int write(std::span<const DmaSegment> dst, const uint8_t* src, size_t len) = 0;
};

// Each segment through the memory it names.
class SegmentDma final : public DmaEngine {
  public:
    int read(std::span<const DmaSegment> src, uint8_t* dst, size_t len) override;
    int write(std::span<const DmaSegment> dst, const uint8_t* src, size_t len) override;
};

} // namespace nicsim
