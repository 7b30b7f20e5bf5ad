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
    b.ah = w.mw->handle;
    b.rkey = (w.mw->rkey & 0xffffff00) | ((w.mw->rkey + 1) & 0xff); // ibv_inc_rkey
    b.remote_addr = reinterpret_cast<uint64_t>(w.buf.data()) + offset;
    b.compare_add = len;
    b.swap = w.mr->handle;
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
    SECTION("an rkey whose index part is not the window's") {
        ipc::SendWqe b{};
        b.opcode = IBV_WR_BIND_MW;
        b.ah = w.mw->handle;
        b.rkey = w.mw->rkey ^ 0x100;
        b.remote_addr = reinterpret_cast<uint64_t>(w.buf.data());
        b.compare_add = 64;
        b.swap = w.mr->handle;
        b.remote_qkey = IBV_ACCESS_REMOTE_READ;
        CHECK(nicsim::bind_window(rig.nic, qp, b) == IBV_WC_MW_BIND_ERR);
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
