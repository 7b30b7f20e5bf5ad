// At registration the kernel pins an MR's pages (ib_umem_get) and fails with EFAULT when it
// cannot: a page that is not mapped, not readable, or not writable while the access needs
// writing (ib_access_writable: local write, remote write, remote atomic, MW bind). The library
// makes the same check against /proc/self/maps before it asks the NIC, so an MR over memory
// that is not there is refused at once. ODP MRs pin nothing and are not checked.
#pragma once

#include <cstddef>
#include <string>

namespace verbs {

// 0, or EFAULT with the reason in `why` ("0x7f..-0x7f.. is not mapped").
int check_mr_pages(const void* addr, size_t length, unsigned access, std::string& why);

} // namespace verbs
