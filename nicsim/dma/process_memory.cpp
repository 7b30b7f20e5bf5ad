#include "process_memory.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <linux/magic.h>
#include <string>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace nicsim {
namespace {

// pread/pwrite until all of it moved. A short count means the rest is unmapped; 0 bytes means
// the address space is gone (its process exited or exec'ed).
template <typename Io> int transfer(uint64_t addr, size_t len, Io io) {
    if (addr > uint64_t(LLONG_MAX) || len > uint64_t(LLONG_MAX) - addr) return EFAULT;
    size_t done = 0;
    while (done < len) {
        ssize_t n = io(done, static_cast<off_t>(addr + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return EFAULT;
        done += static_cast<size_t>(n);
    }
    return 0;
}

} // namespace

const std::shared_ptr<ProcessMemory>& ProcessMemory::nic() {
    static const auto self = std::make_shared<ProcessMemory>(
        UniqueFd(::open("/proc/self/mem", O_RDWR | O_CLOEXEC)), ::getpid());
    return self;
}

int ProcessMemory::check_descriptor(int fd) {
    struct statfs fs {};
    if (::fstatfs(fd, &fs) < 0) return errno;
    if (fs.f_type != PROC_SUPER_MAGIC) return EBADF;
    char link[64];
    std::string self = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = ::readlink(self.c_str(), link, sizeof link - 1);
    if (n < 0) return errno;
    link[n] = 0;
    size_t len = static_cast<size_t>(n);
    if (len < 4 || std::strcmp(link + len - 4, "/mem") != 0) return EBADF;
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) return errno;
    return (flags & O_ACCMODE) == O_RDWR ? 0 : EACCES;
}

int ProcessMemory::read(uint64_t addr, void* dst, size_t len) {
    auto* out = static_cast<char*>(dst);
    return transfer(addr, len, [&](size_t done, off_t at) {
        return ::pread(fd_.get(), out + done, len - done, at);
    });
}

int ProcessMemory::write(uint64_t addr, const void* src, size_t len) {
    auto* in = static_cast<const char*>(src);
    return transfer(addr, len, [&](size_t done, off_t at) {
        return ::pwrite(fd_.get(), in + done, len - done, at);
    });
}

} // namespace nicsim
