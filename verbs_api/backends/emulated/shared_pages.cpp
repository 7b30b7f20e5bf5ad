#include "backends/emulated/shared_pages.h"

#include "backends/emulated/process_maps.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <pthread.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace verbs {
namespace {

constexpr const char* kMemfdName = "rdmaemu-mr";

struct Region {
    uint64_t length = 0;
    int memfd = -1;
    ino_t inode = 0;
    unsigned claims = 0;
};

std::mutex regions_mutex;
std::map<uint64_t, Region> regions; // by start address

uint64_t page_size() {
    static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    return page;
}

// Private anonymous read-write memory that may be swapped: the heap, anonymous mmaps, thread
// stacks. Not the main stack (it grows down), files, shared or huge-page mappings.
bool swappable(const Vma& v) {
    return std::strcmp(v.perms, "rw-p") == 0 && v.inode == 0 &&
           (v.path.empty() || v.path == "[heap]");
}

// Whether [start, start + length) still maps region `r`'s memfd, all of it.
bool still_ours(uint64_t start, const Region& r) {
    return covered_by(start, start + r.length, [&r](const Vma& v) {
        return std::strcmp(v.perms, "rw-s") == 0 && v.inode == r.inode &&
               v.path.rfind(std::string("/memfd:") + kMemfdName, 0) == 0;
    });
}

// Puts private anonymous memory with the same bytes where `r` is mapped at `start`.
void make_private(uint64_t start, const Region& r) {
    if (!still_ours(start, r)) return; // the app unmapped or replaced it meanwhile
    void* copy =
        ::mmap(nullptr, r.length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) return; // it stays shared: still the app's bytes
    // The bytes come from the memfd, not through the app's addresses: the app may have freed
    // the range already (UCX's registration cache deregisters after free(); ASan saw the copy
    // read freed heap), and the pages must keep their bytes whoever owns them now.
    for (uint64_t done = 0; done < r.length;) {
        ssize_t n = ::pread(r.memfd, static_cast<char*>(copy) + done, r.length - done,
                            static_cast<off_t>(done));
        if (n <= 0) { // it stays shared: still the app's bytes
            ::munmap(copy, r.length);
            return;
        }
        done += static_cast<uint64_t>(n);
    }
    if (::mremap(copy, r.length, r.length, MREMAP_MAYMOVE | MREMAP_FIXED,
                 reinterpret_cast<void*>(start)) == MAP_FAILED)
        ::munmap(copy, r.length);
}

// A fork() child gets private copies of the shared pages (as copy-on-write would give it) and
// none of the parent's claims: the NIC keeps reaching the parent's pages for the parent's MRs.
void lock_for_fork() {
    regions_mutex.lock();
}
void unlock_after_fork() {
    regions_mutex.unlock();
}
void child_after_fork() {
    for (auto& [start, r] : regions) {
        make_private(start, r);
        ::close(r.memfd);
    }
    regions.clear();
    regions_mutex.unlock();
}

// A memfd holding the bytes of [start, start + length), sealed against shrinking (the NIC's
// mapping of it must never fault), mapped over them. -1 on any failure, the pages untouched.
int swap_in_memfd(uint64_t start, uint64_t length, ino_t* inode) {
    int fd = ::memfd_create(kMemfdName, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    bool ok = ::ftruncate(fd, static_cast<off_t>(length)) == 0;
    for (uint64_t done = 0; ok && done < length;) {
        ssize_t n = ::pwrite(fd, reinterpret_cast<const char*>(start) + done, length - done,
                             static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        ok = n > 0;
        if (ok) done += static_cast<uint64_t>(n);
    }
    struct stat st {};
    ok = ok && ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0 &&
         ::fstat(fd, &st) == 0;
    ok = ok && ::mmap(reinterpret_cast<void*>(start), length, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED;
    if (!ok) {
        ::close(fd);
        return -1;
    }
    *inode = st.st_ino;
    return fd;
}

} // namespace

PageShare share_pages(const void* addr, size_t length, unsigned access) {
    static std::once_flag fork_handlers;
    std::call_once(fork_handlers,
                   [] { ::pthread_atfork(lock_for_fork, unlock_after_fork, child_after_fork); });
    PageShare out;
    if (access & IBV_ACCESS_ON_DEMAND) return out; // its pages may come and go
    const uint64_t page = page_size();
    uint64_t a = reinterpret_cast<uint64_t>(addr);
    if (length > UINT64_MAX - a) return out;
    uint64_t start = (a + page - 1) / page * page, end = (a + length) / page * page;
    if (end <= start) return out;
    std::lock_guard lock(regions_mutex);
    auto it = regions.upper_bound(start);
    if (it != regions.begin()) {
        auto prev = std::prev(it);
        if (prev->first + prev->second.length > start) it = prev;
    }
    if (it != regions.end() && it->first < end) { // shared pages are there already
        Region& r = it->second;
        if (it->first > start || it->first + r.length < end) return out; // not inside them
        ++r.claims;
        out.pages = {start, end - start, start - it->first};
        out.memfd = r.memfd;
        out.region = it->first;
        return out;
    }
    if (!covered_by(start, end, swappable)) return out;
    Region r;
    r.length = end - start;
    r.memfd = swap_in_memfd(start, r.length, &r.inode);
    if (r.memfd < 0) return out;
    r.claims = 1;
    regions[start] = r;
    out.pages = {start, r.length, 0};
    out.memfd = r.memfd;
    out.region = start;
    return out;
}

void release_pages(uint64_t region) {
    if (region == 0) return;
    std::lock_guard lock(regions_mutex);
    auto it = regions.find(region);
    if (it == regions.end() || --it->second.claims > 0) return;
    make_private(region, it->second);
    ::close(it->second.memfd);
    regions.erase(it);
}

} // namespace verbs
