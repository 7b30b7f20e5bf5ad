// Explanations of refused memory accesses (memory_access.h): the rule, the key, the range
// against the MR's, and the keys the protection domain does have, nearest first. Built only
// when an access failed, never on the way of a packet that passes.
#include "emu/verbs_names.h"
#include "memory_access.h"
#include "nic/nic.h"
#include "objects/objects.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <bit>
#include <vector>

namespace nicsim {

namespace {

namespace names = emu::names;

constexpr size_t kKeysShown = 3;

// What the request does with the memory, for sentences: "WRITE", "READ", "atomic".
const char* operation(uint32_t need) {
    if (need & IBV_ACCESS_REMOTE_WRITE) return "WRITE";
    if (need & IBV_ACCESS_REMOTE_READ) return "READ";
    return "atomic";
}

std::string bytes(uint64_t n) {
    return fmt::format("{} byte{}", n, n == 1 ? "" : "s");
}

// "mr#2 (rkey 0x.., 4096 bytes at 0x...)"
std::string mr_text(const Mr& mr, const char* key_kind, uint32_t key) {
    return fmt::format("mr#{} ({} {:#x}, {} at {:#x})", mr.handle, key_kind, key, bytes(mr.length),
                       mr.iova);
}

std::string mw_text(const Mw& mw) {
    return fmt::format("mw#{} (rkey {:#x}, type {}, {} at {:#x})", mw.handle, mw.rkey, mw.type,
                       bytes(mw.length), mw.addr);
}

// Where [va, va + len) lies against [start, start + length): "it ends 1 byte past ...".
std::string overlap(uint64_t va, uint64_t len, uint64_t start, uint64_t length, const char* what) {
    if (va + len < va) return "its end is past the last address";
    if (va < start)
        return fmt::format("it starts {} before the {}'s start", bytes(start - va), what);
    if (va >= start + length)
        return fmt::format("it starts {} past the {}'s end", bytes(va - (start + length)), what);
    return fmt::format("it ends {} past the {}'s end", bytes(va + len - (start + length)), what);
}

// The keys of `pd`'s MRs (and, for rkeys, windows), fewest bits away from `key` first: a key
// mistyped or taken from another MR shows its right neighbour.
std::string pd_keys(const Nic& nic, const Pd* pd, uint32_t key, bool remote) {
    struct Candidate {
        uint32_t key;
        int distance;
        std::string text;
    };
    std::vector<Candidate> found;
    nic.for_each_mr([&](const Mr& mr) {
        if (mr.pd != pd) return;
        uint32_t k = remote ? mr.rkey : mr.lkey;
        found.push_back(
            {k, std::popcount(k ^ key),
             fmt::format("{:#x} (mr#{}, {} at {:#x})", k, mr.handle, bytes(mr.length), mr.iova)});
    });
    if (remote)
        nic.for_each_mw([&](const Mw& mw) {
            if (mw.pd != pd || !mw.mr) return;
            found.push_back({mw.rkey, std::popcount(mw.rkey ^ key),
                             fmt::format("{:#x} (mw#{}, {} at {:#x})", mw.rkey, mw.handle,
                                         bytes(mw.length), mw.addr)});
        });
    const char* kind = remote ? "rkeys" : "lkeys";
    if (found.empty()) return fmt::format("the QP's PD has no MRs, so no {}", kind);
    std::sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) {
        return a.distance != b.distance ? a.distance < b.distance : a.key < b.key;
    });
    std::string out = fmt::format("the QP's PD has {} ", kind);
    for (size_t i = 0; i < found.size() && i < kKeysShown; ++i)
        out += (i ? ", " : "") + found[i].text;
    if (found.size() > kKeysShown) out += fmt::format(" and {} more", found.size() - kKeysShown);
    return out;
}

} // namespace

Explanation explain_remote(const Nic& nic, const RemoteAccess& a) {
    KeyCheck c = check_remote(nic, a);
    const std::string right = names::access_flags(a.need);
    switch (c.fault) {
    case AccessFault::None:
        return {"the access is allowed", {}};
    case AccessFault::NoPd:
        return {fmt::format("no protection domain to check rkey {:#x} against (the XRC SRQ the "
                            "request names is gone)",
                            a.rkey),
                {}};
    case AccessFault::UnknownKey:
        // The index of a window of this PD with another key byte: a stale rkey (each bind
        // sets the low byte). Its current key is for the owner only, in the hint.
        if (const Mw* mw = nic.mw_by_index(a.rkey); mw && mw->pd == a.pd)
            return {fmt::format("rkey {:#x} names no MR; its index is memory window mw#{}'s, whose "
                                "key byte is another (each bind sets it)",
                                a.rkey, mw->handle),
                    pd_keys(nic, a.pd, a.rkey, true)};
        return {fmt::format("rkey {:#x} names no MR", a.rkey), pd_keys(nic, a.pd, a.rkey, true)};
    case AccessFault::OtherPd:
        return {fmt::format("rkey {:#x} names {} of another protection domain than the QP's",
                            a.rkey, c.mw ? "a memory window" : "an MR"),
                pd_keys(nic, a.pd, a.rkey, true)};
    case AccessFault::NoRight: {
        if (c.mw)
            return {fmt::format("{} does not allow {}: the window grants {}", mw_text(*c.mw), right,
                                names::access_flags(c.mw->access)),
                    {}};
        const Mr& mr = *nic.mr_by_rkey(a.rkey);
        return {fmt::format("{} does not allow {}: it was registered with {}",
                            mr_text(mr, "rkey", a.rkey), right, names::access_flags(mr.access)),
                {}};
    }
    case AccessFault::OutOfRange: {
        std::string range =
            fmt::format("the {} of {} at {:#x}", operation(a.need), bytes(a.len), a.va);
        if (c.mw)
            return {fmt::format("{} is not inside {}: {}", range, mw_text(*c.mw),
                                overlap(a.va, a.len,
                                        (c.mw->access & IBV_ACCESS_ZERO_BASED) ? 0 : c.mw->addr,
                                        c.mw->length, "window")),
                    {}};
        const Mr& mr = *nic.mr_by_rkey(a.rkey);
        return {fmt::format("{} is not inside {}: {}", range, mr_text(mr, "rkey", a.rkey),
                            overlap(a.va, a.len, mr.iova, mr.length, "MR")),
                {}};
    }
    case AccessFault::WindowUnbound:
        return {fmt::format("rkey {:#x} is memory window mw#{}, which is bound to no MR", a.rkey,
                            c.mw->handle),
                {}};
    case AccessFault::WindowOtherQp:
        return {fmt::format("rkey {:#x} is type 2 window mw#{}, bound through qp {:#x}, not this "
                            "QP (IBA 10.6.7.2)",
                            a.rkey, c.mw->handle, c.mw->qpn),
                {}};
    }
    return {"refused", {}};
}

Explanation explain_local(const Nic& nic, const Pd* pd, const emu::ipc::Sge* sges, uint32_t n,
                          uint32_t need) {
    for (uint32_t i = 0; i < n; ++i) {
        const emu::ipc::Sge& s = sges[i];
        if (s.length == 0) continue;
        KeyCheck c = check_local(nic, pd, s, need);
        switch (c.fault) {
        case AccessFault::None:
            continue;
        case AccessFault::UnknownKey:
            return {fmt::format("sge[{}] lkey {:#x} names no MR", i, s.lkey),
                    pd_keys(nic, pd, s.lkey, false)};
        case AccessFault::OtherPd:
            return {fmt::format("sge[{}] lkey {:#x} names an MR of another protection domain than "
                                "the QP's",
                                i, s.lkey),
                    pd_keys(nic, pd, s.lkey, false)};
        case AccessFault::OutOfRange: {
            const Mr& mr = *nic.mr_by_lkey(s.lkey);
            return {fmt::format("sge[{}] ({} at {:#x}) is not inside {}: {}", i, bytes(s.length),
                                s.addr, mr_text(mr, "lkey", s.lkey),
                                overlap(s.addr, s.length, mr.iova, mr.length, "MR")),
                    {}};
        }
        case AccessFault::NoRight: {
            const Mr& mr = *nic.mr_by_lkey(s.lkey);
            return {fmt::format("sge[{}] {} lacks {}, which the NIC needs to write the data "
                                "into it: it was registered with {}",
                                i, mr_text(mr, "lkey", s.lkey), names::access_flags(need),
                                names::access_flags(mr.access)),
                    {}};
        }
        default:
            return {fmt::format("sge[{}] refused", i), {}};
        }
    }
    return {"every SGE is allowed", {}};
}

} // namespace nicsim
