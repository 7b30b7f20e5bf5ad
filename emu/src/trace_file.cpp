#include "emu/trace_file.h"
#include "emu/appendf.h"

#include "emu/backend_mode.h"

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

namespace emu::trace_file {
namespace {

constexpr uint64_t kMagic = 0x52444d4154524331ull; // "RDMATRC1"
constexpr const char* kMappingName = "rdmaemu-trace";

int* this_copys_depth() {
    static thread_local int depth = 0;
    return &depth;
}

// What the two libraries share; lives in the memfd mapping.
struct Shared {
    uint64_t magic = kMagic;
    int fd = -1;
    std::chrono::steady_clock::time_point start{};
    int* (*depth)() = this_copys_depth; // the thread-local of the copy that made it
};

// "%p" in the path becomes the pid, so each process of a run writes its own file.
std::string expand_path(const char* pattern) {
    std::string path;
    for (const char* c = pattern; *c; ++c) {
        if (c[0] == '%' && c[1] == 'p') {
            path += std::to_string(getpid());
            ++c;
        } else {
            path += *c;
        }
    }
    return path;
}

// The program's arguments, each after a space (from /proc/self/cmdline).
std::string command_line() {
    std::string args;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return args;
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof buf);
    close(fd);
    for (ssize_t i = 0; i < n; ++i) {
        if (i == 0 || buf[i - 1] == '\0') args += ' ';
        if (buf[i]) args += buf[i];
    }
    return args;
}

// The other library's state, when it made one: the start of our mapping in /proc/self/maps.
Shared* find_published() {
    FILE* maps = std::fopen("/proc/self/maps", "re");
    if (!maps) return nullptr;
    Shared* found = nullptr;
    char line[512];
    const std::string name = std::string("/memfd:") + kMappingName + " ";
    while (!found && std::fgets(line, sizeof line, maps)) {
        if (!std::strstr(line, name.c_str())) continue;
        uintptr_t start = 0;
        if (std::sscanf(line, "%" SCNxPTR "-", &start) != 1) continue;
        auto* s = reinterpret_cast<Shared*>(start);
        if (s->magic == kMagic) found = s;
    }
    std::fclose(maps);
    return found;
}

// Our state in a mapping the other copy can find (or on the heap when memfd fails).
Shared* publish(const Shared& state) {
    int mfd = memfd_create(kMappingName, MFD_CLOEXEC);
    void* at = MAP_FAILED;
    if (mfd >= 0 && ftruncate(mfd, sizeof(Shared)) == 0)
        at = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_PRIVATE, mfd, 0);
    if (mfd >= 0) close(mfd);
    if (at == MAP_FAILED) return new Shared(state);
    return new (at) Shared(state);
}

void write_header(int fd) {
    std::string header = "# rdmaemu verbs trace: pid " + std::to_string(getpid()) + ", mode " +
                         backend_mode_name(backend_mode_from_env()) + ", program" + command_line() +
                         "\n";
    // Where the trace's clock starts on the wall clock the captures are stamped with, and which
    // host of a set the program ran on: what `rdmaemu timeline` lines the traces and captures
    // of a run up by.
    timespec wall{};
    clock_gettime(CLOCK_REALTIME, &wall);
    const char* host = std::getenv("RDMAEMU_HOST");
    char clock_line[96];
    std::snprintf(clock_line, sizeof clock_line, "# clock realtime=%lld.%09ld host=%s\n",
                  static_cast<long long>(wall.tv_sec), wall.tv_nsec, host && *host ? host : "-");
    header += clock_line;
    ssize_t ignored = ::write(fd, header.data(), header.size());
    (void)ignored;
}

Shared* open_trace() {
    const char* env = std::getenv("RDMAEMU_TRACE");
    if (!env || !*env) return nullptr;
    std::string path = expand_path(env);
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        std::fprintf(stderr, "rdmaemu: cannot write the verbs trace %s: %s\n", path.c_str(),
                     std::strerror(errno));
        return nullptr;
    }
    // The two copies may start tracing at once on two threads: the lock (one per open file
    // description, so it holds between two opens in one process) lets one make the state.
    flock(fd, LOCK_EX);
    if (Shared* other = find_published()) {
        flock(fd, LOCK_UN);
        close(fd);
        return other;
    }
    Shared state;
    state.fd = fd;
    write_header(fd);
    state.start = std::chrono::steady_clock::now();
    Shared* mine = publish(state);
    flock(fd, LOCK_UN);
    return mine;
}

Shared* shared() {
    static Shared* const s = open_trace();
    return s;
}

using emu::appendf;

} // namespace

bool enabled() {
    return shared() != nullptr;
}

int& depth() {
    Shared* s = shared();
    return *(s ? s->depth() : this_copys_depth());
}

void write_line(const char* kind, const std::string& text) {
    Shared* s = shared();
    if (!s) return;
    int saved_errno = errno; // tracing must not change what the app sees
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - s->start).count();
    std::string line;
    appendf(line, "%12.6f %7d %s ", t, int(gettid()), kind);
    line += text;
    line += '\n';
    // One write per line: O_APPEND keeps lines of concurrent threads and processes whole.
    ssize_t ignored = ::write(s->fd, line.data(), line.size());
    (void)ignored;
    errno = saved_errno;
}

} // namespace emu::trace_file
