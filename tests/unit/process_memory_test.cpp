// ProcessMemory reaches a process's memory through the /proc/<pid>/mem descriptor that process
// opened itself: exactly that address space, and nothing once it is gone (exit or exec), so a
// process that later gets the same pid is never touched.
#include "dma/process_memory.h"
#include "emu/ipc/socket_io.h"

#include <catch2/catch.hpp>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

using nicsim::ProcessMemory;
using nicsim::UniqueFd;

namespace {

uint64_t addr(const void* p) {
    return reinterpret_cast<uint64_t>(p);
}

ProcessMemory own_memory() {
    return ProcessMemory(UniqueFd(::open("/proc/self/mem", O_RDWR | O_CLOEXEC)), ::getpid());
}

// A child that opens its own /proc/self/mem and hands it over, as the library does, then waits
// until it is told to exit (or to exec `sleep`).
class Child {
  public:
    explicit Child(bool exec_after_handing_over = false) {
        int sv[2];
        REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
        pid_ = ::fork();
        if (pid_ == 0) {
            ::close(sv[0]);
            int mem = ::open("/proc/self/mem", O_RDWR | O_CLOEXEC);
            char byte = 'm';
            emu::ipc::send_message(sv[1], &byte, 1, &mem, 1);
            if (exec_after_handing_over) ::execlp("sleep", "sleep", "30", nullptr);
            ::pause();
            ::_exit(0);
        }
        ::close(sv[1]);
        char byte = 0;
        emu::ipc::PassedFds fds;
        REQUIRE(emu::ipc::recv_message(sv[0], &byte, 1, &fds) == 1);
        ::close(sv[0]);
        REQUIRE(fds.count == 1);
        mem_ = UniqueFd(fds.fd[0]);
    }
    ~Child() { kill(); }
    void kill() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
    pid_t pid() const { return pid_; }
    UniqueFd take_memory() { return std::move(mem_); }

  private:
    pid_t pid_ = -1;
    UniqueFd mem_;
};

} // namespace

TEST_CASE("ProcessMemory: reads and writes the memory of its own process", "[dma]") {
    ProcessMemory mem = own_memory();
    std::array<uint8_t, 64> a{};
    a.fill(0xA1);
    std::array<uint8_t, 64> out{};
    REQUIRE(mem.read(addr(a.data()), out.data(), out.size()) == 0);
    CHECK(out == a);
    std::array<uint8_t, 16> in{};
    in.fill(0x5C);
    REQUIRE(mem.write(addr(a.data()) + 8, in.data(), in.size()) == 0);
    CHECK(a[7] == 0xA1);
    CHECK(a[8] == 0x5C);
    CHECK(a[23] == 0x5C);
    CHECK(a[24] == 0xA1);
}

TEST_CASE("ProcessMemory: unmapped memory is EFAULT, never a crash", "[dma]") {
    ProcessMemory mem = own_memory();
    long page = ::sysconf(_SC_PAGESIZE);
    auto* p = static_cast<uint8_t*>(
        ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(p != MAP_FAILED);
    std::memset(p, 0x77, 2 * page);
    REQUIRE(::munmap(p + page, page) == 0); // the second page goes away
    std::vector<uint8_t> buf(2 * page);
    CHECK(mem.read(addr(p), buf.data(), page) == 0);
    CHECK(buf[0] == 0x77);
    CHECK(mem.read(addr(p) + page - 8, buf.data(), 16) == EFAULT); // crosses into the hole
    CHECK(mem.write(addr(p) + page, buf.data(), 1) == EFAULT);
    CHECK(mem.read(~uint64_t(0) - 4, buf.data(), 16) == EFAULT); // wraps around
    ::munmap(p, page);
}

TEST_CASE("ProcessMemory: another process's memory through the descriptor it handed over",
          "[dma]") {
    std::array<uint8_t, 32> a{};
    a.fill(0xC3);
    Child child; // its copy of `a` holds 0xC3 from now on
    a.fill(0x11);
    ProcessMemory mem(child.take_memory(), child.pid());
    std::array<uint8_t, 32> out{};
    REQUIRE(mem.read(addr(a.data()), out.data(), out.size()) == 0);
    CHECK(out[0] == 0xC3); // the child's bytes, not ours
    std::array<uint8_t, 4> in{9, 9, 9, 9};
    REQUIRE(mem.write(addr(a.data()), in.data(), in.size()) == 0);
    CHECK(a[0] == 0x11); // ours are untouched

    SECTION("once it exited, nothing is reached") {
        child.kill();
        CHECK(mem.read(addr(a.data()), out.data(), out.size()) == EFAULT);
        CHECK(mem.write(addr(a.data()), in.data(), in.size()) == EFAULT);
    }
}

TEST_CASE("ProcessMemory: a process that exec'ed is a new address space, out of reach", "[dma]") {
    std::array<uint8_t, 32> a{};
    Child child(true);
    ProcessMemory mem(child.take_memory(), child.pid());
    // The exec replaces the address space the descriptor was opened on.
    for (int i = 0; i < 200 && mem.read(addr(a.data()), a.data(), 1) == 0; ++i)
        ::usleep(10000);
    CHECK(mem.read(addr(a.data()), a.data(), a.size()) == EFAULT);
    CHECK(mem.write(addr(a.data()), a.data(), a.size()) == EFAULT);
}

TEST_CASE("ProcessMemory: only a /proc/<pid>/mem opened read-write is a process's memory",
          "[dma]") {
    auto check = [](const char* path, int flags) {
        UniqueFd fd(::open(path, flags | O_CLOEXEC));
        REQUIRE(fd);
        return ProcessMemory::check_descriptor(fd.get());
    };
    CHECK(check("/proc/self/mem", O_RDWR) == 0);
    CHECK(check("/proc/self/mem", O_RDONLY) == EACCES);
    CHECK(check("/proc/self/status", O_RDONLY) == EBADF);
    CHECK(check("/dev/null", O_RDWR) == EBADF);
}
