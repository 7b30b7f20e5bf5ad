#include "backends/emulated/mr_pages.h"

#include "backends/emulated/process_maps.h"

#include "emu/access_flags.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>

namespace verbs {

int check_mr_pages(const void* addr, size_t length, unsigned access, std::string& why) {
    const uint64_t start = reinterpret_cast<uintptr_t>(addr);
    // What the kernel refuses before it pins (EINVAL) is left to the NIC to refuse.
    if (length == 0 || length > UINT64_MAX - start || emu::check_mr_access(access)) return 0;
    if (access & IBV_ACCESS_ON_DEMAND) return 0;
    const bool writable = access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND);
    const char* refused = nullptr;
    uint64_t at = start; // where the MR stops being what the access needs
    bool ok = covered_by(start, start + length, [&](const Vma& v) {
        if (v.perms[0] != 'r')
            refused = "mapped without read access";
        else if (writable && v.perms[1] != 'w')
            refused = "mapped read-only while the access writes";
        if (refused) return false;
        at = v.end;
        return true;
    });
    if (ok) return 0;
    char text[160];
    std::snprintf(text, sizeof text, "the MR's memory at %#" PRIx64 " is %s", at,
                  refused ? refused : "not mapped");
    why = text;
    return EFAULT;
}

} // namespace verbs
