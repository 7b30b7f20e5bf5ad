// Memory windows (IBA 10.6.7): a bound window grants remote access to its range only, with its
// own rights; a type 2 window serves only the QP it was bound through; invalidation and dealloc
// take the access away.
#include "protocol_rig.h"
#include "transport/memory_windows.h"

using namespace proto;

namespace {

constexpr uint32_t kE = 0x500; // the responder's first expected PSN (QpOptions::rq_psn)

struct Window {
    std::vector<uint8_t> buf = std::vector<uint8_t>(4096, 0xEE);
    Mr* mr = nullptr;
    nicsim::Mw* mw = nullptr;
};

// An MR with MW_BIND (no remote rights of its own) and a window of `type` on it.
Window make_window(Rig& rig, uint32_t type) {
    Window w;
    w.mr = &rig.reg_mr(w.buf.data(), w.buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
    ipc::AllocMwReply r{};
    REQUIRE(nicsim::alloc_mw(rig.ctx, {rig.pd, type}, r) == 0);
    w.mw = rig.objects.mws.get(r.handle);
    return w;
}

// BIND_MW of [offset, offset + len) of the MR with `access`, through `qp`.
ibv_wc_status bind(Rig& rig, Qp& qp, Window& w, uint64_t offset, uint64_t len, uint32_t access) {
    ipc::SendWqe b{};
    b.opcode = IBV_WR_BIND_MW;
    b.imm_data = w.mw->rkey;
    b.rkey = (w.mw->rkey & 0xffffff00) | ((w.mw->rkey + 1) & 0xff); // ibv_inc_rkey
    b.remote_addr = reinterpret_cast<uint64_t>(w.buf.data()) + offset;
    b.compare_add = len;
    b.swap = w.mr->lkey;
    b.remote_qkey = access;
    return nicsim::bind_window(rig.nic, qp, b);
}

void write_through(Rig& rig, Qp& qp, uint32_t rkey, uint64_t va, const std::vector<uint8_t>& d) {
    wire::Headers h = request(wire::opcode::kWriteOnly, kE);
    h.reth = {va, rkey, static_cast<uint32_t>(d.size())};
    rig.deliver(qp, h, d.data(), d.size());
}

uint8_t syndrome_of_reply(Rig& rig) {
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    return sent[0].h.aeth.syndrome;
}

} // namespace

TEST_CASE("memory window: a bound type 2 window grants its range and rights, nothing more",
          "[mw]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    Window w = make_window(rig, IBV_MW_TYPE_2);
    const uint64_t base = reinterpret_cast<uint64_t>(w.buf.data());
    auto data = pattern(64, 4);

    SECTION("unbound: remote access error, memory untouched") {
        write_through(rig, qp, w.mw->rkey, base, data);
        CHECK(syndrome_of_reply(rig) == wire::aeth_nak(wire::NakCode::RemoteAccessError));
        CHECK(w.buf[0] == 0xEE);
    }
    SECTION("bound: a WRITE inside lands; one past the range is refused") {
        REQUIRE(bind(rig, qp, w, 1024, 128, IBV_ACCESS_REMOTE_WRITE) == IBV_WC_SUCCESS);
        write_through(rig, qp, w.mw->rkey, base + 1024, data);
        CHECK(syndrome_of_reply(rig) == wire::aeth_ack());
        CHECK(bytes_of(w.buf, 1024, 64) == data);
        wire::Headers h = request(wire::opcode::kWriteOnly, kE + 1);
        h.reth = {base + 1024 + 100, w.mw->rkey, 64}; // ends 36 bytes past the window
        rig.deliver(qp, h, data.data(), data.size());
        CHECK(syndrome_of_reply(rig) == wire::aeth_nak(wire::NakCode::RemoteAccessError));
        CHECK(w.buf[1024 + 100] == 0xEE);
    }
    SECTION("bound for write only: a READ is refused") {
        REQUIRE(bind(rig, qp, w, 0, 4096, IBV_ACCESS_REMOTE_WRITE) == IBV_WC_SUCCESS);
        wire::Headers h = request(wire::opcode::kReadRequest, kE);
        h.reth = {base, w.mw->rkey, 64};
        rig.deliver(qp, h);
        CHECK(syndrome_of_reply(rig) == wire::aeth_nak(wire::NakCode::RemoteAccessError));
    }
    SECTION("another QP may not use a type 2 window bound through this one") {
        REQUIRE(bind(rig, qp, w, 0, 4096, IBV_ACCESS_REMOTE_WRITE) == IBV_WC_SUCCESS);
        Qp& other = rig.create_qp(o);
        write_through(rig, other, w.mw->rkey, base, data);
        CHECK(syndrome_of_reply(rig) == wire::aeth_nak(wire::NakCode::RemoteAccessError));
        CHECK(w.buf[0] == 0xEE);
    }
    SECTION("a bound type 2 window must be invalidated before it is bound again") {
        REQUIRE(bind(rig, qp, w, 0, 4096, IBV_ACCESS_REMOTE_WRITE) == IBV_WC_SUCCESS);
        CHECK(bind(rig, qp, w, 0, 64, IBV_ACCESS_REMOTE_WRITE) == IBV_WC_MW_BIND_ERR);
        REQUIRE(nicsim::invalidate_local(rig.nic, qp, w.mw->rkey) == IBV_WC_SUCCESS);
        CHECK(w.mr->windows == 0);
        write_through(rig, qp, w.mw->rkey, base, data);
        CHECK(syndrome_of_reply(rig) == wire::aeth_nak(wire::NakCode::RemoteAccessError));
    }
    SECTION("deregistering an MR with a bound window is busy; deallocating the window frees it") {
        REQUIRE(bind(rig, qp, w, 0, 4096, IBV_ACCESS_REMOTE_WRITE) == IBV_WC_SUCCESS);
        ipc::Empty none;
        CHECK(nicsim::dereg_mr(rig.ctx, {w.mr->handle, 0}, none) == EBUSY);
        uint32_t rkey = w.mw->rkey;
        REQUIRE(nicsim::dealloc_mw(rig.ctx, {w.mw->handle, 0}, none) == 0);
        write_through(rig, qp, rkey, base, data);
        CHECK(syndrome_of_reply(rig) == wire::aeth_nak(wire::NakCode::RemoteAccessError));
    }
}

TEST_CASE("memory window: binding checks the MR, the rights and the rkey", "[mw]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    Window w = make_window(rig, IBV_MW_TYPE_1);

    SECTION("a range outside the MR") {
        CHECK(bind(rig, qp, w, 4000, 200, IBV_ACCESS_REMOTE_WRITE) == IBV_WC_MW_BIND_ERR);
    }
    SECTION("an MR without MW_BIND") {
        Mr& plain = rig.reg_mr(w.buf.data(), w.buf.size(), IBV_ACCESS_LOCAL_WRITE);
        w.mr = &plain;
        CHECK(bind(rig, qp, w, 0, 64, IBV_ACCESS_REMOTE_READ) == IBV_WC_MW_BIND_ERR);
    }
    SECTION("an rkey with another index: the window keeps its own, takes the key byte") {
        // rxe_do_bind_mw and mlx5 take only the low 8 bits of the WR's rkey.
        const uint32_t index = w.mw->rkey & 0xffffff00;
        ipc::SendWqe b{};
        b.opcode = IBV_WR_BIND_MW;
        b.imm_data = w.mw->rkey;
        b.rkey = ((w.mw->rkey ^ 0x12345600) & 0xffffff00) | 0x5A;
        b.remote_addr = reinterpret_cast<uint64_t>(w.buf.data());
        b.compare_add = 64;
        b.swap = w.mr->lkey;
        b.remote_qkey = IBV_ACCESS_REMOTE_READ;
        REQUIRE(nicsim::bind_window(rig.nic, qp, b) == IBV_WC_SUCCESS);
        CHECK(w.mw->rkey == (index | 0x5A));
        CHECK(rig.nic.mw_by_rkey(index | 0x5A) == w.mw);
        CHECK(rig.nic.mw_by_rkey(b.rkey) == nullptr);
    }
    SECTION("type 1: rebinding moves the window; a zero-length bind unbinds it") {
        REQUIRE(bind(rig, qp, w, 0, 64, IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS);
        REQUIRE(bind(rig, qp, w, 128, 64, IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS);
        CHECK(w.mw->addr == reinterpret_cast<uint64_t>(w.buf.data()) + 128);
        CHECK(w.mr->windows == 1);
        REQUIRE(bind(rig, qp, w, 0, 0, 0) == IBV_WC_SUCCESS);
        CHECK(w.mw->mr == nullptr);
        CHECK(w.mr->windows == 0);
    }
}

// A bind names its window by the rkey's index (as mlx5's WQE carries the MW's rkey, rxe's its
// mw_rkey) and its MR by the lkey: a bind naming neither completes at once with MW_BIND_ERR,
// even on a QP whose local ACK timeout is 0 (infinite): it never waits for the wire.
TEST_CASE("memory window: a bind through the SQ naming no window or no MR completes at once",
          "[mw]") {
    Rig rig;
    QpOptions o;
    o.timeout = 0;
    Qp& qp = rig.create_qp(o);
    Window w = make_window(rig, IBV_MW_TYPE_2);
    ipc::SendWqe b = wqe(1, IBV_WR_BIND_MW, 0); // unsignaled: an error completes all the same
    b.imm_data = w.mw->rkey;
    b.rkey = 1024;
    b.remote_addr = reinterpret_cast<uint64_t>(w.buf.data());
    b.compare_add = 64;
    b.swap = w.mr->lkey;
    b.remote_qkey = IBV_ACCESS_REMOTE_READ;
    SECTION("an rkey whose index names no window") {
        b.imm_data ^= 0x01000000;
    }
    SECTION("an lkey that names no MR") {
        b.swap ^= 0x5a5a00;
    }
    SECTION("a range outside the MR") {
        b.compare_add = 8192;
    }
    rig.post_send(qp, b);
    auto wcs = expect_wcs(*qp.send_cq, {{.wr_id = 1, .status = IBV_WC_MW_BIND_ERR}});
    CHECK(wcs[0].qp_num == qp.qpn);
    CHECK(rig.env.take().empty());
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
    CHECK(w.mw->mr == nullptr);
}

// Bind rules of rxe_check_bind_mw and mlx5: the QP's PD must be the window's, for type 1 as for
// type 2 (IBA C10-72; google/rdma-unit-test PdBindTest.MrMwOnOtherPd: MW_BIND_ERR); no
// zero-based type 1 window (IBA o10-36.2.2); no window on a zero-based MR.
TEST_CASE("memory window: binds the hardware refuses", "[mw]") {
    Rig rig;
    QpOptions o;
    const uint32_t type = GENERATE(uint32_t(IBV_MW_TYPE_1), uint32_t(IBV_MW_TYPE_2));
    INFO("type " << type);
    {
        Window w = make_window(rig, type);
        SECTION("through a QP of another PD") {
            ipc::HandleReply r{};
            REQUIRE(nicsim::alloc_pd(rig.ctx, ipc::Empty{}, r) == 0);
            const uint32_t mine = rig.pd;
            rig.pd = r.handle;
            Qp& other = rig.create_qp(o);
            rig.pd = mine;
            CHECK(bind(rig, other, w, 0, 64, IBV_ACCESS_REMOTE_READ) == IBV_WC_MW_BIND_ERR);
        }
        SECTION("onto a zero-based MR") {
            w.mr = &rig.reg_mr(w.buf.data(), w.buf.size(),
                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED);
            Qp& qp = rig.create_qp(o);
            CHECK(bind(rig, qp, w, 0, 64, IBV_ACCESS_REMOTE_READ) == IBV_WC_MW_BIND_ERR);
        }
        SECTION("zero-based: a type 1 window may not be") {
            Qp& qp = rig.create_qp(o);
            ibv_wc_status want = type == IBV_MW_TYPE_1 ? IBV_WC_MW_BIND_ERR : IBV_WC_SUCCESS;
            CHECK(bind(rig, qp, w, 0, 64, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED) == want);
        }
        CHECK(w.mr->windows == (w.mw->mr ? 1u : 0u));
    }
}

// A zero-based type 2 window is addressed from 0 at its start (ibv_bind_mw(3); mlx5 binds it
// with start_addr 0; google/rdma-unit-test MwGeneralTest.ReadZeroBased passes on mlx5).
TEST_CASE("memory window: a zero-based type 2 window is addressed from its start", "[mw]") {
    Rig rig;
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    Window w = make_window(rig, IBV_MW_TYPE_2);
    for (size_t i = 0; i < w.buf.size(); ++i)
        w.buf[i] = static_cast<uint8_t>(i * 7);
    REQUIRE(bind(rig, qp, w, 1024, 512,
                 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED) ==
            IBV_WC_SUCCESS);

    SECTION("a READ at 0 reads the window's first bytes") {
        wire::Headers h = request(wire::opcode::kReadRequest, kE);
        h.reth = {0, w.mw->rkey, 64};
        rig.deliver(qp, h);
        auto sent = rig.env.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].h.opcode == rc(wire::opcode::kReadResponseOnly));
        CHECK(sent[0].payload == bytes_of(w.buf, 1024, 64));
    }
    SECTION("a WRITE at 100 lands 100 bytes into the window") {
        auto data = pattern(32, 9);
        write_through(rig, qp, w.mw->rkey, 100, data);
        CHECK(syndrome_of_reply(rig) == wire::aeth_ack());
        CHECK(bytes_of(w.buf, 1124, 32) == data);
    }
    SECTION("its range is [0, length): the window's own addresses are out of it") {
        auto data = pattern(32, 9);
        write_through(rig, qp, w.mw->rkey, reinterpret_cast<uint64_t>(w.buf.data()) + 1024, data);
        CHECK(syndrome_of_reply(rig) == wire::aeth_nak(wire::NakCode::RemoteAccessError));
    }
}
