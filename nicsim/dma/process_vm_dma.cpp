#include "dma_engine.h"

#include <cerrno>
#include <sys/uio.h>

namespace nicsim {
namespace {

constexpr size_t kMaxIov = 64; // IOV_MAX is 1024; batches keep the stack small

// Runs fn(pid, local, remote, count) over the segments in batches of one owner each; fn
// returns bytes moved or -1.
template <typename Fn>
int transfer(pid_t owner, std::span<const DmaSegment> segs, uint8_t* buf, size_t len, Fn fn) {
    iovec local[1];
    iovec remote[kMaxIov];
    size_t done = 0;
    size_t i = 0;
    while (i < segs.size()) {
        size_t n = 0;
        size_t batch = 0;
        pid_t pid = 0;
        for (; i < segs.size() && n < kMaxIov; ++i) {
            if (segs[i].length == 0) continue;
            pid_t p = segs[i].owner ? segs[i].owner : owner;
            if (n && p != pid) break; // the next batch is another process's memory
            pid = p;
            remote[n++] = {reinterpret_cast<void*>(segs[i].addr), segs[i].length};
            batch += segs[i].length;
        }
        if (batch == 0) break;
        if (done + batch > len) return EINVAL;
        local[0] = {buf + done, batch};
        ssize_t moved = fn(pid, local, remote, n);
        if (moved < 0) return errno == ESRCH ? EFAULT : errno;
        if (static_cast<size_t>(moved) != batch) return EFAULT; // part of the range is unmapped
        done += batch;
    }
    return done == len ? 0 : EINVAL;
}

} // namespace

int ProcessVmDma::read(pid_t owner, std::span<const DmaSegment> src, uint8_t* dst, size_t len) {
    return transfer(owner, src, dst, len, [](pid_t pid, iovec* l, iovec* r, size_t n) {
        return ::process_vm_readv(pid, l, 1, r, n, 0);
    });
}

int ProcessVmDma::write(pid_t owner, std::span<const DmaSegment> dst, const uint8_t* src,
                        size_t len) {
    return transfer(owner, dst, const_cast<uint8_t*>(src), len,
                    [](pid_t pid, iovec* l, iovec* r, size_t n) {
                        return ::process_vm_writev(pid, l, 1, r, n, 0);
                    });
}

} // namespace nicsim
