#include "backends/emulated/process_maps.h"

#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace verbs {

std::string read_maps() {
    std::string text;
    int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return text;
    char buf[8192];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0)
        text.append(buf, static_cast<size_t>(n));
    ::close(fd);
    return text;
}

bool next_vma(const std::string& maps, size_t& pos, Vma& v) {
    if (pos >= maps.size()) return false;
    size_t eol = maps.find('\n', pos);
    if (eol == std::string::npos) eol = maps.size();
    std::string line = maps.substr(pos, eol - pos);
    pos = eol + 1;
    v = Vma{};
    unsigned long s = 0, e = 0, off = 0, inode = 0;
    unsigned dmaj = 0, dmin = 0;
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %4s %lx %x:%x %lu %n", &s, &e, v.perms, &off, &dmaj,
                    &dmin, &inode, &path_at) < 7)
        return false;
    v.start = s;
    v.end = e;
    v.inode = inode;
    if (path_at > 0 && static_cast<size_t>(path_at) <= line.size()) v.path = line.substr(path_at);
    return true;
}

} // namespace verbs
