#include "shared_memory.h"

#include <cerrno>
#include <sys/mman.h>
#include <unistd.h>

namespace nicsim {

SharedMemory& SharedMemory::operator=(SharedMemory&& o) noexcept {
    if (this != &o) {
        if (data_) ::munmap(data_, size_);
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
    }
    return *this;
}

SharedMemory::~SharedMemory() {
    if (data_) ::munmap(data_, size_);
}

int SharedMemory::create(const char* name, size_t bytes, SharedMemory& out, UniqueFd& fd) {
    UniqueFd f(::memfd_create(name, MFD_CLOEXEC));
    if (!f) return errno;
    if (::ftruncate(f.get(), static_cast<off_t>(bytes)) < 0) return errno;
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f.get(), 0);
    if (p == MAP_FAILED) return errno;
    out = SharedMemory();
    out.data_ = p;
    out.size_ = bytes;
    fd = std::move(f);
    return 0;
}

} // namespace nicsim
