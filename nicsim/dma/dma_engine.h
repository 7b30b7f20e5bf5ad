// How the transport moves bytes between packets and memory: a transfer is a stretch of a
// scatter list, each segment in the memory of the MR it was resolved against. A fault becomes
// EFAULT, never a crash; the transport turns it into the completion status hardware would
// report.
#pragma once

#include "memory.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace nicsim {

struct DmaSegment {
    uint64_t addr = 0; // in `memory`
    size_t length = 0;
    // Held for as long as the segment is: a WR in flight keeps the memory of an MR that is
    // deregistered meanwhile (its accesses then fail or reach pages only the NIC still holds).
    std::shared_ptr<Memory> memory;
};

class DmaEngine {
  public:
    virtual ~DmaEngine() = default;
    // Copies the `len` bytes that start `offset` bytes into the scatter list `sg` into dst.
    virtual int read(std::span<const DmaSegment> sg, uint64_t offset, uint8_t* dst, size_t len) = 0;
    // Copies `len` bytes from src into the scatter list `sg`, from `offset` bytes into it.
    virtual int write(std::span<const DmaSegment> sg, uint64_t offset, const uint8_t* src,
                      size_t len) = 0;
};

// Each segment through the memory it names.
class SegmentDma final : public DmaEngine {
  public:
    int read(std::span<const DmaSegment> sg, uint64_t offset, uint8_t* dst, size_t len) override;
    int write(std::span<const DmaSegment> sg, uint64_t offset, const uint8_t* src,
              size_t len) override;
};

// Runs move(segment, address in it, bytes, position in the transfer) over the part of `sg` that
// [offset, offset + len) covers; EINVAL when the list is shorter.
template <typename Move>
int for_each_piece(std::span<const DmaSegment> sg, uint64_t offset, size_t len, Move move) {
    size_t done = 0;
    for (const DmaSegment& s : sg) {
        if (done == len) break;
        if (offset >= s.length) {
            offset -= s.length;
            continue;
        }
        size_t take = static_cast<size_t>(std::min<uint64_t>(s.length - offset, len - done));
        if (!s.memory) return EINVAL;
        if (int err = move(s, s.addr + offset, take, done)) return err;
        done += take;
        offset = 0;
    }
    return done == len ? 0 : EINVAL;
}

} // namespace nicsim
