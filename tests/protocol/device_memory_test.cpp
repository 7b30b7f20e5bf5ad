// Device memory: MRs on it are zero-based (addresses from 0, for lkeys and rkeys alike) and lie
// in the NIC's own mapping, so the engines DMA them in the NIC's own memory, not the app's. The
// verbs' checks: max_dm_size, EBUSY while MRs use a DM, teardown order.
#include "dma/process_memory.h"
#include "nic/device_limits.h"
#include "protocol_rig.h"

#include <algorithm>

using namespace proto;

namespace {

constexpr uint32_t kE = 0x500;  // the responder's first expected PSN (QpOptions::rq_psn)
constexpr pid_t kAppPid = 4242; // the session's process: its memory is not the NIC's

uint8_t* dm_bytes(const nicsim::Dm& dm, uint64_t offset) {
    return static_cast<uint8_t*>(dm.memory.data()) + offset;
}

std::vector<uint8_t> dm_range(const nicsim::Dm& dm, uint64_t offset, size_t n) {
    return {dm_bytes(dm, offset), dm_bytes(dm, offset) + n};
}

const nicsim::Memory* nic_memory() {
    return nicsim::ProcessMemory::nic().get();
}

bool all_in(const std::vector<const nicsim::Memory*>& memories, const nicsim::Memory* memory) {
    return !memories.empty() &&
           std::all_of(memories.begin(), memories.end(), [memory](auto* m) { return m == memory; });
}

} // namespace

TEST_CASE("device memory: a zero-based DM MR as a local SGE", "[dm]") {
    Rig rig;
    rig.ctx.pid = kAppPid;
    nicsim::Memory& app = bind_memory(rig.objects, kAppPid);
    QpOptions o;
    Qp& qp = rig.create_qp(o);
    REQUIRE(qp.pid == kAppPid);
    nicsim::Dm& dm = rig.alloc_dm(4096);
    Mr& mr = rig.reg_dm_mr(dm, 1024, 2048, IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr.iova == 0);
    CHECK(mr.memory.get() == nic_memory());
    auto data = pattern(300, 9);

    SECTION("SEND from it") {
        std::copy(data.begin(), data.end(), dm_bytes(dm, 1024 + 100));
        rig.post_send(qp, wqe(1, IBV_WR_SEND), {{100, 300, mr.lkey}});
        auto sent = rig.env.take();
        REQUIRE(sent.size() == 1);
        CHECK(sent[0].h.opcode == rc(wire::opcode::kSendOnly));
        CHECK(sent[0].payload == data);
        CHECK(all_in(rig.env.fake_dma.memories, nic_memory()));
    }
    SECTION("a READ response lands in it") {
        rig.post_send(qp, rdma_wqe(2, IBV_WR_RDMA_READ, 0x10000, 0x5), {{0, 300, mr.lkey}});
        REQUIRE(rig.env.take().size() == 1);
        rig.deliver(qp, read_response(wire::opcode::kReadResponseOnly, o.sq_psn), data.data(),
                    data.size());
        expect_wcs(*qp.send_cq, {{}});
        CHECK(dm_range(dm, 1024, 300) == data);
        CHECK(all_in(rig.env.fake_dma.memories, nic_memory()));
    }
    SECTION("a SEND from the peer lands in it, next to app memory in one receive") {
        std::vector<uint8_t> host(100, 0xEE);
        Mr& host_mr = rig.reg_mr(host.data(), host.size(), IBV_ACCESS_LOCAL_WRITE);
        rig.post_recv(qp, 7, {{8, 200, mr.lkey}, sge(host.data(), host.size(), host_mr)});
        rig.deliver(qp, request(wire::opcode::kSendOnly, kE), data.data(), data.size());
        expect_wcs(*qp.recv_cq, {{.byte_len = 300}});
        CHECK(dm_range(dm, 1024 + 8, 200) == bytes_of(data, 0, 200));
        CHECK(host == bytes_of(data, 200, 100));
        // Each segment went to its own MR's memory.
        CHECK(rig.env.fake_dma.memories == std::vector<const nicsim::Memory*>{nic_memory(), &app});
    }
    SECTION("addresses outside [0, length) are a local protection error") {
        uint64_t addr = 0;
        SECTION("past the end") {
            addr = 2000;
        }
        SECTION("the NIC's own mapping") {
            addr = mr.addr;
        }
        rig.post_send(qp, wqe(3, IBV_WR_SEND), {{addr, 100, mr.lkey}});
        CHECK(rig.env.take().empty());
        expect_wcs(*qp.send_cq, {{.wr_id = 3, .status = IBV_WC_LOC_PROT_ERR}});
        CHECK(rig.env.fake_dma.memories.empty());
    }
}

TEST_CASE("device memory: a zero-based DM MR as a remote target", "[dm]") {
    Rig rig;
    rig.ctx.pid = kAppPid;
    bind_memory(rig.objects, kAppPid);
    Qp& qp = rig.create_qp();
    nicsim::Dm& dm = rig.alloc_dm(2048);
    std::fill(dm_bytes(dm, 0), dm_bytes(dm, 2048), 0xEE);
    Mr& mr = rig.reg_dm_mr(
        dm, 64, 1024, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    auto data = pattern(100, 4);

    wire::Headers w = request(wire::opcode::kWriteOnly, kE);
    w.reth = {16, mr.rkey, 100};
    rig.deliver(qp, w, data.data(), data.size());
    auto sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.aeth.syndrome == wire::aeth_ack());
    CHECK(dm_range(dm, 64 + 16, 100) == data);
    CHECK(*dm_bytes(dm, 64 + 15) == 0xEE);

    wire::Headers r = request(wire::opcode::kReadRequest, kE + 1);
    r.reth = {16, mr.rkey, 100};
    rig.deliver(qp, r);
    sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].payload == data);
    CHECK(all_in(rig.env.fake_dma.memories, nic_memory()));

    // Past the MR's end (offset 1000 + 100 > 1024), though still inside the DM.
    wire::Headers bad = request(wire::opcode::kWriteOnly, kE + 2);
    bad.reth = {1000, mr.rkey, 100};
    rig.deliver(qp, bad, data.data(), data.size());
    sent = rig.env.take();
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].h.aeth.syndrome == wire::aeth_nak(wire::NakCode::RemoteAccessError));
    CHECK(qp.attr.qp_state == IBV_QPS_ERR);
}

TEST_CASE("device memory: allocation limits, registration checks, EBUSY and teardown", "[dm]") {
    Rig rig;
    ipc::AllocDmReply ar{};
    ipc::Empty e;
    auto alloc = [&](uint64_t len, uint32_t log_align = 0, uint32_t comp_mask = 0) {
        int err = nicsim::alloc_dm(rig.ctx, {len, log_align, comp_mask}, ar);
        rig.ctx.pass_fds.clear();
        return err;
    };
    constexpr uint64_t kMax = nicsim::limits::kMaxDmSize;

    CHECK(alloc(kMax + 1) == EINVAL);
    CHECK(alloc(0) == EINVAL);
    CHECK(alloc(64, 0, 1) == EINVAL); // no comp_mask bits are defined
    CHECK(alloc(64, nicsim::limits::kMaxDmLogAlign + 1) == EINVAL);
    REQUIRE(alloc(kMax / 2, 6) == 0);
    uint32_t half = ar.handle;
    CHECK(ar.map_bytes >= kMax / 2);
    CHECK(alloc(kMax / 2 + 4) == ENOMEM); // fits the device, not what is left
    REQUIRE(alloc(kMax / 2) == 0);
    uint32_t other = ar.handle;
    CHECK(rig.nic.totals().dm_bytes == kMax);
    REQUIRE(nicsim::dealloc_dm(rig.ctx, {other, 0}, e) == 0);
    CHECK(nicsim::dealloc_dm(rig.ctx, {other, 0}, e) == ENOENT);

    nicsim::Dm& dm = *rig.objects.dms.get(half);
    ipc::RegMrReply rr{};
    auto reg = [&](uint64_t offset, uint64_t len, uint32_t access) {
        return nicsim::reg_dm_mr(rig.ctx, {rig.pd, dm.handle, access, 0, offset, len}, rr);
    };
    const uint32_t zb = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE;
    CHECK(reg(0, 64, IBV_ACCESS_LOCAL_WRITE) == EINVAL); // DM MRs are zero-based
    CHECK(reg(0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE) == EINVAL);
    CHECK(reg(kMax / 2 - 60, 64, zb) == EINVAL);
    CHECK(reg(kMax / 2 + 4, 0, zb) == EINVAL);
    CHECK(reg(UINT64_MAX - 8, 64, zb) == EINVAL);
    CHECK(reg(kMax / 2, 0, zb) == 0); // empty, at the end: allowed, as the kernel does
    uint32_t empty_mr = rr.handle;
    REQUIRE(reg(4, 64, zb) == 0);
    uint32_t mr = rr.handle;
    CHECK(dm.users == 2);

    ipc::ReregMrReq rq{};
    rq.mr = mr;
    rq.flags = IBV_REREG_MR_CHANGE_ACCESS;
    rq.access = zb;
    ipc::ReregMrReply rrr{};
    CHECK(nicsim::rereg_mr(rig.ctx, rq, rrr) == EINVAL);

    CHECK(nicsim::dealloc_dm(rig.ctx, {half, 0}, e) == EBUSY);
    REQUIRE(nicsim::dereg_mr(rig.ctx, {empty_mr, 0}, e) == 0);
    CHECK(nicsim::dealloc_dm(rig.ctx, {half, 0}, e) == EBUSY);
    CHECK(dm.users == 1);
    // The refusal says what holds it (the app reads this reason with the EBUSY).
    CHECK(rig.ctx.reason == fmt::format("DM handle {} is still used by 1 MR(s) registered on it: "
                                        "destroy it first",
                                        half));

    // The session ends with the MR still on the DM: MRs go first, then the DM.
    free_session_objects(rig.nic, rig.objects);
    CHECK(rig.objects.dms.empty());
    CHECK(rig.objects.mrs.empty());
    CHECK(rig.nic.totals().dm_bytes == 0);
    CHECK(rig.nic.totals().mr == 0);
}
