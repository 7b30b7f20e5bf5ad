// Registered memory the NIC maps too (FreeFlow's design). At ibv_reg_mr the library replaces the
// whole pages of the MR with a shared mapping of a memfd that holds the same bytes, at the same
// address, and hands the memfd to the NIC with the registration; the NIC then moves bytes there
// with plain memory copies, not a syscall per packet. Where that cannot be done the pages stay
// as they are and the NIC reaches them through the process's /proc/self/mem: partly covered
// first and last pages, file-backed or already shared mappings, the main stack, huge pages,
// read-only memory, on-demand (ODP) MRs, ranges that overlap shared pages without lying inside
// them.
//
// Semantics kept: the app sees its bytes unchanged; two MRs on the same pages share them; when
// the last MR over them is deregistered the pages become private anonymous memory again (what
// glibc expects of memory it may later madvise away); a fork() child gets private copies, as
// with copy-on-write. A thread writing into the pages while ibv_reg_mr swaps them may lose that
// write (the swap copies, then maps).
#pragma once

#include "emu/ipc/protocol.h"

#include <cstddef>
#include <cstdint>

namespace verbs {

// An MR's claim on shared pages: its pages (length 0: none) and where they lie in the memfd to
// send with the registration (valid until the claim is released), and the shared region the
// claim is on (what release_pages() takes).
struct PageShare {
    emu::ipc::SharedPages pages{};
    int memfd = -1;
    uint64_t region = 0;
};

// Shares the whole pages of [addr, addr + length) for an MR with `access` flags, or joins the
// shared pages they lie inside.
PageShare share_pages(const void* addr, size_t length, unsigned access);
// Ends the claim of an MR (deregistration, a failed registration, a new translation) on shared
// region `region` (0: none). The last claim makes the pages private again.
void release_pages(uint64_t region);

} // namespace verbs
