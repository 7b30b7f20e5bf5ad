// The whole pages of an MR that the app turned into a shared mapping at registration (a sealed
// memfd it handed over, FreeFlow's design; verbs_api/backends/emulated/shared_pages.cpp): the NIC
// maps the same pages and moves bytes there with plain memory copies, no syscall. Bytes of the MR
// outside them (a partly covered first or last page) go through the process's memory.
#pragma once

#include "memory.h"

#include <cstdint>
#include <memory>

namespace nicsim {

class MappedMemory final : public Memory {
  public:
    // Maps `length` bytes of `memfd` from `offset` as app addresses [start, start + length);
    // `rest` serves every other address. Null, with *err set, when the memfd is not sealed
    // against shrinking (a shrink under the NIC's mapping would make its accesses fault) or
    // is too short, or the mapping fails.
    static std::shared_ptr<MappedMemory> map(int memfd, uint64_t offset, uint64_t start,
                                             uint64_t length, std::shared_ptr<Memory> rest,
                                             int* err);
    MappedMemory(uint8_t* base, uint64_t start, uint64_t length, std::shared_ptr<Memory> rest)
        : base_(base), start_(start), length_(length), rest_(std::move(rest)) {}
    ~MappedMemory() override;
    MappedMemory(const MappedMemory&) = delete;
    MappedMemory& operator=(const MappedMemory&) = delete;

    int read(uint64_t addr, void* dst, size_t len) override;
    int write(uint64_t addr, const void* src, size_t len) override;
    const char* engine() const override { return "mapped"; }
    uint64_t shared_bytes() const override { return length_; }

  private:
    // Runs inside(pointer, n, at) on the mapped part of [addr, addr + len) and outside(addr, n,
    // at) on the rest, in address order.
    template <typename Inside, typename Outside>
    int split(uint64_t addr, size_t len, Inside inside, Outside outside);

    uint8_t* base_; // the NIC's mapping of start_
    uint64_t start_, length_;
    std::shared_ptr<Memory> rest_;
};

} // namespace nicsim
