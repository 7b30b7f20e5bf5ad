// ProcessVmDma moves each segment in its owner's memory: the transfer's process unless the
// segment names another (an MR on device memory lies in the NIC's own process).
#include "dma/dma_engine.h"

#include <catch2/catch.hpp>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

using nicsim::DmaSegment;
using nicsim::ProcessVmDma;

namespace {

constexpr pid_t kNoProcess = 0x7fffffff; // above any pid_max

uint64_t addr(const void* p) {
    return reinterpret_cast<uint64_t>(p);
}

// A child that keeps a copy of our memory as it was at fork(), until it is destroyed.
class Child {
  public:
    Child() {
        pid_ = ::fork();
        if (pid_ == 0) {
            ::pause();
            ::_exit(0);
        }
    }
    ~Child() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    pid_t pid() const { return pid_; }

  private:
    pid_t pid_;
};

} // namespace

TEST_CASE("ProcessVmDma: segments naming an owner move that process's memory", "[dma]") {
    ProcessVmDma dma;
    std::array<uint8_t, 64> a{}, b{};
    a.fill(0xA1);
    b.fill(0xB2);
    std::array<uint8_t, 128> out{};

    SECTION("the transfer's process for segments that name none") {
        DmaSegment segs[] = {{addr(a.data()), 64}, {addr(b.data()), 64}};
        REQUIRE(dma.read(::getpid(), segs, out.data(), out.size()) == 0);
        CHECK(out[0] == 0xA1);
        CHECK(out[64] == 0xB2);
        CHECK(dma.read(kNoProcess, segs, out.data(), out.size()) == EFAULT);
    }
    SECTION("a segment's own owner wins over the transfer's") {
        DmaSegment segs[] = {{addr(a.data()), 64, ::getpid()}, {addr(b.data()), 64, ::getpid()}};
        REQUIRE(dma.read(kNoProcess, segs, out.data(), out.size()) == 0);
        CHECK(out[127] == 0xB2);
        DmaSegment mixed[] = {{addr(a.data()), 64, ::getpid()}, {addr(b.data()), 64}};
        CHECK(dma.read(kNoProcess, mixed, out.data(), out.size()) == EFAULT);
    }
    SECTION("one transfer across two processes") {
        Child child; // its a and b still hold 0xA1 and 0xB2
        REQUIRE(child.pid() > 0);
        a.fill(0x11);
        b.fill(0x22);
        DmaSegment segs[] = {{addr(a.data()), 32, child.pid()},
                             {addr(a.data()) + 32, 32},
                             {addr(b.data()), 64, child.pid()}};
        REQUIRE(dma.read(::getpid(), segs, out.data(), out.size()) == 0);
        CHECK(out[0] == 0xA1);
        CHECK(out[31] == 0xA1);
        CHECK(out[32] == 0x11);
        CHECK(out[64] == 0xB2);

        std::array<uint8_t, 128> in;
        in.fill(0x5C);
        REQUIRE(dma.write(::getpid(), segs, in.data(), in.size()) == 0);
        CHECK(a[0] == 0x11); // the child's copy was written, not ours
        CHECK(a[32] == 0x5C);
        REQUIRE(dma.read(child.pid(), segs, out.data(), out.size()) == 0);
        CHECK(out[0] == 0x5C);
        CHECK(out[32] == 0xA1); // the child's own a[32..63], never written
        CHECK(out[64] == 0x5C);
    }
}
