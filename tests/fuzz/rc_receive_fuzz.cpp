// Fuzz target: the RC responder and completer (transport::receive) as the Engine hands them packets
// that parsed, driven through the protocol rig's fake environment (tests/protocol/protocol_rig.h:
// the NIC's own verbs make the objects, DMA stays in this process, the clock is the input's).
// One RC QP in RTS with receives and a few requests of every kind outstanding takes the input's
// packets, posts and clock steps; the rig's checks (every packet sent parses, every DMA stays in
// its scatter list) and ASan watch what the engines do with them.
//
// The input: one byte of set-up, then commands (below). So that packets from a real capture mean
// something here, each packet's PSN counts from the QP's expected one (requests) or from its
// first sent one (responses), its destination is the QP, an even rkey is the MR's, and a
// virtual address below the buffer's size is an offset in it.
#include "protocol_rig.h"

#include <cstdlib>

namespace {

using namespace proto;

constexpr size_t kBuf = 64 * 1024;
constexpr uint32_t kSqPsn = 0x100, kRqPsn = 0x500;

// The input, read front to back; running out reads zeros.
struct Input {
    const uint8_t* data;
    size_t left;
    uint8_t u8() { return left ? (--left, *data++) : 0; }
    uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
    size_t take(size_t n, const uint8_t** at) {
        n = n < left ? n : left;
        *at = data;
        data += n;
        left -= n;
        return n;
    }
};

struct Harness {
    Rig rig;
    std::vector<uint8_t> buf = std::vector<uint8_t>(kBuf);
    Mr* mr = nullptr;
    Qp* qp = nullptr;

    explicit Harness(uint8_t setup) {
        mr = &rig.reg_mr(buf.data(), buf.size(),
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                             IBV_ACCESS_REMOTE_ATOMIC);
        QpOptions o;
        o.sq_psn = kSqPsn;
        o.rq_psn = kRqPsn;
        o.mtu = (setup & 1) ? IBV_MTU_256 : IBV_MTU_1024;
        o.sq_sig_all = setup & 2;
        o.max_rd_atomic = (setup & 4) ? 1 : 4;
        o.retry_cnt = 1;
        o.rnr_retry = 1;
        qp = &rig.create_qp(o);
        for (uint64_t i = 0; i < 8; ++i)
            post_recv(static_cast<uint16_t>(i * 4096), 4096);
        if (setup & 8) return; // no requests outstanding: responses are all ghosts
        post_send(IBV_WR_SEND, 0, 2500, 0);
        post_send(IBV_WR_RDMA_WRITE, 4096, 3000, 8192);
        post_send(IBV_WR_RDMA_READ, 16384, 2100, 0);
        post_send(IBV_WR_ATOMIC_FETCH_AND_ADD, 32768, 8, 64);
    }

    void post_recv(uint16_t off, uint16_t len) {
        uint32_t at = off % kBuf, n = len % (kBuf - at + 1);
        rig.post_recv(*qp, 0x1000 + off, {sge(buf.data() + at, n, *mr)});
    }

    void post_send(uint8_t op, uint16_t off, uint16_t len, uint16_t remote) {
        static constexpr ibv_wr_opcode kOps[] = {IBV_WR_SEND,
                                                 IBV_WR_SEND_WITH_IMM,
                                                 IBV_WR_RDMA_WRITE,
                                                 IBV_WR_RDMA_WRITE_WITH_IMM,
                                                 IBV_WR_RDMA_READ,
                                                 IBV_WR_ATOMIC_FETCH_AND_ADD,
                                                 IBV_WR_ATOMIC_CMP_AND_SWP};
        ibv_wr_opcode opcode = kOps[op % std::size(kOps)];
        bool atomic = opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || opcode == IBV_WR_ATOMIC_CMP_AND_SWP;
        uint32_t at = atomic ? off % (kBuf / 8) * 8 : off % kBuf;
        uint32_t n = atomic ? 8 : len % (kBuf - at + 1);
        ipc::SendWqe w =
            rdma_wqe(0x2000 + op, opcode,
                     reinterpret_cast<uint64_t>(buf.data()) + remote % (kBuf / 8) * 8, 0x1234);
        w.compare_add = len;
        rig.enqueue_send(*qp, w, {sge(buf.data() + at, n, *mr)});
        rig.doorbell();
    }

    // A packet of the peer's, placed on this QP (see the top of the file).
    void deliver(const uint8_t* bytes, size_t len) {
        wire::Headers h;
        const uint8_t* payload = nullptr;
        size_t payload_len = 0;
        if (wire::parse(bytes, len, h, &payload, &payload_len) != wire::ParseResult::Ok) return;
        if (!wire::has(h.opcode, wire::kRC)) return; // the Engine's transport check
        h.dest_qpn = qp->qpn;
        h.psn = wire::psn_add(wire::has(h.opcode, wire::kResponse) ? kSqPsn : kRqPsn, h.psn);
        const uint64_t base = reinterpret_cast<uint64_t>(buf.data());
        if (!(h.reth.rkey & 1)) h.reth.rkey = mr->rkey;
        if (h.reth.va < kBuf) h.reth.va += base;
        if (!(h.atomic_eth.rkey & 1)) h.atomic_eth.rkey = mr->rkey;
        if (h.atomic_eth.va < kBuf) h.atomic_eth.va += base;
        nicsim::transport::receive(rig.env, *qp, h, payload, payload_len);
        rig.env.drain();
    }

    void poll() {
        Rig::poll(*qp->send_cq);
        Rig::poll(*qp->recv_cq);
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t len) {
    Input in{data, len};
    Harness h(in.u8());
    for (int steps = 0; in.left && steps < 256; ++steps) {
        uint8_t cmd = in.u8();
        switch (cmd % 8) {
        case 4: {
            uint8_t op = in.u8();
            uint16_t off = in.u16(), n = in.u16(), remote = in.u16();
            h.post_send(op, off, n, remote);
            break;
        }
        case 5: {
            uint16_t off = in.u16(), n = in.u16();
            h.post_recv(off, n);
            break;
        }
        case 6:
            h.rig.env.advance(uint64_t(in.u16()) * 1000); // up to a minute, in ms
            break;
        case 7:
            h.poll();
            break;
        default: { // a packet: u16 length, then its bytes
            const uint8_t* bytes = nullptr;
            size_t n = in.take(in.u16(), &bytes);
            std::vector<uint8_t> packet(bytes, bytes + n); // exact size, for ASan
            h.deliver(packet.data(), packet.size());
        }
        }
        h.rig.env.take(); // what went on the wire has been checked by the rig
    }
    return 0;
}
