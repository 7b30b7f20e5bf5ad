#include "mapped_memory.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

namespace nicsim {

std::shared_ptr<MappedMemory> MappedMemory::map(int memfd, uint64_t offset, uint64_t start,
                                                uint64_t length, std::shared_ptr<Memory> rest,
                                                int* err) {
    int seals = ::fcntl(memfd, F_GET_SEALS);
    struct stat st {};
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        *err = EPERM;
        return nullptr;
    }
    if (::fstat(memfd, &st) < 0 || offset + length < offset ||
        static_cast<uint64_t>(st.st_size) < offset + length) {
        *err = EINVAL;
        return nullptr;
    }
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, memfd,
                     static_cast<off_t>(offset));
    if (p == MAP_FAILED) {
        *err = errno;
        return nullptr;
    }
    return std::make_shared<MappedMemory>(static_cast<uint8_t*>(p), start, length, std::move(rest));
}

MappedMemory::~MappedMemory() {
    ::munmap(base_, length_);
}

template <typename Inside, typename Outside>
int MappedMemory::split(uint64_t addr, size_t len, Inside inside, Outside outside) {
    if (len > UINT64_MAX - addr) return EFAULT;
    uint64_t end = addr + len, lo = std::max(addr, start_), hi = std::min(end, start_ + length_);
    if (lo >= hi) return outside(addr, len, 0);
    if (addr < lo)
        if (int e = outside(addr, lo - addr, 0)) return e;
    inside(base_ + (lo - start_), hi - lo, lo - addr);
    if (hi < end) return outside(hi, end - hi, hi - addr);
    return 0;
}

int MappedMemory::read(uint64_t addr, void* dst, size_t len) {
    auto* out = static_cast<uint8_t*>(dst);
    return split(
        addr, len, [out](const uint8_t* p, size_t n, size_t at) { std::memcpy(out + at, p, n); },
        [this, out](uint64_t a, size_t n, size_t at) { return rest_->read(a, out + at, n); });
}

int MappedMemory::write(uint64_t addr, const void* src, size_t len) {
    auto* in = static_cast<const uint8_t*>(src);
    return split(
        addr, len, [in](uint8_t* p, size_t n, size_t at) { std::memcpy(p, in + at, n); },
        [this, in](uint64_t a, size_t n, size_t at) { return rest_->write(a, in + at, n); });
}

} // namespace nicsim
