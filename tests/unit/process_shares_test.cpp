// Per-process shares (nicsimd --max-per-process) through the verbs the daemon runs: one process
// gets EAGAIN past its share, with a log line naming the limit; another process still gets its
// own; freeing one makes room again.
#include "nic/config.h"
#include "nic/nic.h"
#include "objects/session_objects.h"
#include "verbs/verbs.h"

#include <catch2/catch.hpp>
#include <spdlog/sinks/ostream_sink.h>

#include <fcntl.h>
#include <sstream>
#include <unistd.h>

namespace {

namespace ipc = emu::ipc;

struct Daemon {
    explicit Daemon(const char* shares)
        : nic(config(shares)),
          log("shares", std::make_shared<spdlog::sinks::ostream_sink_mt>(lines)) {}

    static nicsim::Config config(const char* shares) {
        nicsim::Config c;
        c.max_per_process = *emu::parse_share_limits(shares);
        return c;
    }

    std::ostringstream lines;
    nicsim::Nic nic;
    spdlog::logger log;
};

// One process's session: its requests come from `pid`.
struct Process {
    Process(Daemon& d, pid_t pid) : ctx{d.nic, objects, d.log, "session#1", pid, {}} {
        objects.memories.bind(pid, nicsim::UniqueFd(::open("/proc/self/mem", O_RDWR)));
    }
    ~Process() { free_session_objects(ctx.nic, objects); }

    int create_cq(uint32_t* handle = nullptr) {
        ipc::CreateCqReply r{};
        int err = nicsim::create_cq(ctx, {1, 0, 0, 0}, r);
        if (handle) *handle = r.handle;
        return err;
    }
    int reg_mr(const void* buf) {
        ipc::RegMrReq q{};
        q.pd = pd();
        q.access = IBV_ACCESS_LOCAL_WRITE;
        q.addr = reinterpret_cast<uint64_t>(buf);
        q.length = 64;
        q.iova = q.addr;
        ipc::RegMrReply r{};
        return nicsim::reg_mr(ctx, q, r);
    }
    int create_qp(uint32_t cq) {
        ipc::CreateQpReq q{};
        q.pd = pd();
        q.send_cq = q.recv_cq = cq;
        q.qp_type = IBV_QPT_RC;
        q.cap = {1, 1, 1, 1, 0};
        ipc::CreateQpReply r{};
        return nicsim::create_qp(ctx, q, r);
    }
    uint32_t pd() {
        if (!pd_) {
            ipc::HandleReply r{};
            REQUIRE(nicsim::alloc_pd(ctx, {}, r) == 0);
            pd_ = r.handle;
        }
        return pd_;
    }

    nicsim::SessionObjects objects;
    nicsim::VerbContext ctx;
    uint32_t pd_ = 0;
};

} // namespace

TEST_CASE("shares: a process past its share of CQs gets EAGAIN, logged with the limit",
          "[shares]") {
    Daemon d("cq=3");
    Process a(d, 1001);
    uint32_t first = 0;
    REQUIRE(a.create_cq(&first) == 0);
    REQUIRE(a.create_cq() == 0);
    REQUIRE(a.create_cq() == 0);
    CHECK(a.create_cq() == EAGAIN);
    CHECK(d.lines.str().find("pid 1001 holds its share of 3 CQs (--max-per-process cq=3)") !=
          std::string::npos);
    Process b(d, 1002);
    CHECK(b.create_cq() == 0); // the other process has a share of its own

    ipc::Empty e;
    REQUIRE(nicsim::destroy_cq(a.ctx, {first, 0}, e) == 0);
    CHECK(a.create_cq() == 0); // freeing one makes room
    CHECK(d.nic.shares().held(emu::Share::Cq, 1001) == 3);
}

TEST_CASE("shares: QPs and MRs count per process; a session's end gives its share back",
          "[shares]") {
    Daemon d("qp=2,mr=2");
    static char buf[64];
    {
        Process a(d, 2001);
        uint32_t cq = 0;
        REQUIRE(a.create_cq(&cq) == 0); // CQs have no share here
        REQUIRE(a.create_qp(cq) == 0);
        REQUIRE(a.create_qp(cq) == 0);
        CHECK(a.create_qp(cq) == EAGAIN);
        REQUIRE(a.reg_mr(buf) == 0);
        REQUIRE(a.reg_mr(buf) == 0);
        CHECK(a.reg_mr(buf) == EAGAIN);
        CHECK(d.nic.shares().held(emu::Share::Qp, 2001) == 2);
    } // the session ends: everything it made is freed
    CHECK(d.nic.shares().held(emu::Share::Qp, 2001) == 0);
    CHECK(d.nic.shares().held(emu::Share::Mr, 2001) == 0);
    Process again(d, 2001);
    uint32_t cq = 0;
    REQUIRE(again.create_cq(&cq) == 0);
    CHECK(again.create_qp(cq) == 0);
}

TEST_CASE("shares: without a share only the device's limits apply", "[shares]") {
    Daemon d("context=1");
    Process a(d, 3001);
    for (int i = 0; i < 100; ++i)
        REQUIRE(a.create_cq() == 0);
    CHECK(d.nic.shares().held(emu::Share::Cq, 3001) == 0); // not even counted
}
