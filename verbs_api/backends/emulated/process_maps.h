// This process's mappings as /proc/self/maps lists them, for the checks the kernel makes with
// page tables: whether a range is mapped, and with what.
#pragma once

#include <cstdint>
#include <string>

namespace verbs {

// One line of /proc/self/maps.
struct Vma {
    uint64_t start = 0, end = 0;
    char perms[5] = {}; // "rw-p"
    uint64_t inode = 0;
    std::string path;
};

// Calls ok(vma) for the mappings over [start, end), in address order; true when they cover it
// without a gap and ok() holds for each.
template <typename Ok> bool covered_by(uint64_t start, uint64_t end, Ok ok);

// The text of /proc/self/maps ("" when it cannot be read).
std::string read_maps();
// Parses the line of `maps` at `pos` into `v` and moves `pos` to the next; false at the end or on
// a line that does not parse.
bool next_vma(const std::string& maps, size_t& pos, Vma& v);

template <typename Ok> bool covered_by(uint64_t start, uint64_t end, Ok ok) {
    std::string maps = read_maps();
    uint64_t at = start;
    size_t pos = 0;
    Vma v;
    while (at < end && next_vma(maps, pos, v)) {
        if (v.end <= at) continue;
        if (v.start > at) return false; // a hole
        if (!ok(v)) return false;
        at = v.end;
    }
    return at >= end;
}

} // namespace verbs
