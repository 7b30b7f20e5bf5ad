// Writes the seed corpus of control_session_fuzz into a directory: conversations a library has
// with its NIC (open a context, make PDs, MRs, CQs, QPs and take them to RTS, SRQs, AHs, XRC,
// device memory, memory windows, tag matching, status), framed as the target reads them. Built
// from protocol.h's own structs, so the seeds follow the protocol as it changes.
//
// usage: fuzz_control_seeds DIR
#include "emu/ipc/protocol.h"

#include <arpa/inet.h>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

namespace ipc = emu::ipc;
using ipc::Op;

class Conversation {
  public:
    // `hello`: the fuzz target opens the context itself (its first input byte).
    explicit Conversation(bool hello) : bytes_{uint8_t(hello ? 1 : 0)} {}

    template <Op op> Conversation& add(const typename ipc::Types<op>::Req& req) {
        constexpr size_t body = ipc::body_size<typename ipc::Types<op>::Req>();
        ipc::Header h{ipc::kMagic, ipc::kVersion, static_cast<uint16_t>(op),
                      static_cast<uint32_t>(sizeof h + body), ++seq_};
        size_t len = sizeof h + body;
        bytes_.push_back(static_cast<uint8_t>(len));
        bytes_.push_back(static_cast<uint8_t>(len >> 8));
        append(&h, sizeof h);
        append(&req, body);
        return *this;
    }
    // A request with no body.
    template <Op op> Conversation& add() { return add<op>({}); }

    bool write(const std::string& path) const {
        FILE* f = std::fopen(path.c_str(), "wb");
        bool ok = f && std::fwrite(bytes_.data(), 1, bytes_.size(), f) == bytes_.size();
        return f && std::fclose(f) == 0 && ok;
    }

  private:
    void append(const void* p, size_t n) {
        auto* b = static_cast<const uint8_t*>(p);
        bytes_.insert(bytes_.end(), b, b + n);
    }
    std::vector<uint8_t> bytes_;
    uint32_t seq_ = 1;
};

ipc::ModifyQpReq to_state(uint32_t qp, ibv_qp_state state) {
    ipc::ModifyQpReq m{};
    m.qp = qp;
    m.attr.qp_state = state;
    switch (state) {
    case IBV_QPS_INIT:
        m.attr.port_num = 1;
        m.attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        m.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
        break;
    case IBV_QPS_RTR:
        m.attr.path_mtu = IBV_MTU_1024;
        m.attr.dest_qp_num = 0x123;
        m.attr.rq_psn = 0x500;
        m.attr.max_dest_rd_atomic = 4;
        m.attr.min_rnr_timer = 12;
        m.attr.ah_attr.is_global = 1;
        m.attr.ah_attr.port_num = 1;
        m.attr.ah_attr.grh.hop_limit = 64;
        m.attr.ah_attr.grh.dgid.raw[10] = m.attr.ah_attr.grh.dgid.raw[11] = 0xff;
        ::inet_pton(AF_INET, "127.0.0.2", &m.attr.ah_attr.grh.dgid.raw[12]);
        m.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        break;
    case IBV_QPS_RTS:
        m.attr.sq_psn = 0x100;
        m.attr.timeout = 14;
        m.attr.retry_cnt = 7;
        m.attr.rnr_retry = 7;
        m.attr.max_rd_atomic = 4;
        m.mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
        break;
    default:
        m.mask = IBV_QP_STATE;
    }
    return m;
}

ipc::CreateQpReq qp_req(uint32_t type, uint32_t cq, uint32_t srq = 0, uint32_t xrcd = 0) {
    ipc::CreateQpReq q{};
    q.pd = 1;
    q.send_cq = q.recv_cq = cq;
    q.srq = srq;
    q.qp_type = type;
    q.cap = {16, srq ? 0u : 16u, 2, srq ? 0u : 2u, 64};
    q.xrcd = xrcd;
    return q;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: fuzz_control_seeds DIR\n");
        return 2;
    }
    static char buffer[8192];
    const auto addr = reinterpret_cast<uint64_t>(buffer);
    std::vector<Conversation> seeds;

    // A device context opened by hand, then queried and asked for the status.
    seeds.push_back(Conversation(false)
                        .add<Op::Hello>({ipc::kHelloContext, 0})
                        .add<Op::QueryDevice>()
                        .add<Op::QueryPort>({1})
                        .add<Op::QueryGid>({1, 0})
                        .add<Op::QueryPkey>({1, 0})
                        .add<Op::Status>());
    // An RC QP to RTS and back, with its PD, MR and CQ.
    ipc::RegMrReq mr{1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, addr, sizeof buffer, addr,
                     {}};
    seeds.push_back(Conversation(true)
                        .add<Op::AllocPd>()
                        .add<Op::RegMr>(mr)
                        .add<Op::CreateCompChannel>()
                        .add<Op::CreateCq>({64, 1, 0, 0})
                        .add<Op::CreateQp>(qp_req(IBV_QPT_RC, 1))
                        .add<Op::ModifyQp>(to_state(1, IBV_QPS_INIT))
                        .add<Op::ModifyQp>(to_state(1, IBV_QPS_RTR))
                        .add<Op::ModifyQp>(to_state(1, IBV_QPS_RTS))
                        .add<Op::QueryQp>({1, IBV_QP_STATE})
                        .add<Op::ResizeCq>({1, 256})
                        .add<Op::Status>()
                        .add<Op::ModifyQp>(to_state(1, IBV_QPS_ERR))
                        .add<Op::DestroyQp>({1, 0})
                        .add<Op::DestroyCq>({1, 0})
                        .add<Op::DestroyCompChannel>({1, 0})
                        .add<Op::DeregMr>({1, 0})
                        .add<Op::DeallocPd>({1, 0}));
    // UD with an SRQ and an AH; a multicast group.
    ipc::CreateAhReq ah{};
    ah.pd = 1;
    ah.attr.is_global = 1;
    ah.attr.port_num = 1;
    ah.attr.grh.dgid.raw[10] = ah.attr.grh.dgid.raw[11] = 0xff;
    ::inet_pton(AF_INET, "127.0.0.2", &ah.attr.grh.dgid.raw[12]);
    ipc::McastReq mcast{};
    mcast.qp = 1;
    mcast.gid[10] = mcast.gid[11] = 0xff;
    ::inet_pton(AF_INET, "224.0.0.7", &mcast.gid[12]);
    ipc::ModifySrqReq limit{1, IBV_SRQ_LIMIT, {0, 0, 4}};
    seeds.push_back(Conversation(true)
                        .add<Op::AllocPd>()
                        .add<Op::CreateCq>({16, 0, 0, 0})
                        .add<Op::CreateSrq>({1, 0, {32, 2, 0}})
                        .add<Op::ModifySrq>(limit)
                        .add<Op::QuerySrq>({1, 0})
                        .add<Op::CreateQp>(qp_req(IBV_QPT_UD, 1, 1))
                        .add<Op::CreateAh>(ah)
                        .add<Op::AttachMcast>(mcast)
                        .add<Op::DetachMcast>(mcast)
                        .add<Op::DestroyAh>({1, 0})
                        .add<Op::DestroySrq>({1, 0}));
    // Device memory, an MR on it, memory windows, a re-registration.
    ipc::ReregMrReq rereg{1, IBV_REREG_MR_CHANGE_ACCESS, 0, IBV_ACCESS_LOCAL_WRITE, 0, 0, 0, {}};
    seeds.push_back(
        Conversation(true)
            .add<Op::AllocPd>()
            .add<Op::RegMr>(mr)
            .add<Op::ReregMr>(rereg)
            .add<Op::AllocDm>({4096, 0, 0})
            .add<Op::RegDmMr>({1, 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED, 0, 0, 4096})
            .add<Op::AllocMw>({1, IBV_MW_TYPE_2})
            .add<Op::ImportObject>({static_cast<uint32_t>(ipc::ImportType::Mr), 1})
            .add<Op::DeallocMw>({1, 0})
            .add<Op::DeregMr>({2, 0})
            .add<Op::FreeDm>({1, 0}));
    // XRC: a domain, an XRC SRQ, a target QP opened again; a tag-matching SRQ with a tag.
    ipc::CreateSrqExReq xsrq{1, IBV_SRQT_XRC, 1, 1, {16, 1, 0}, 0, 0};
    ipc::CreateSrqExReq tm{1, IBV_SRQT_TM, 0, 1, {16, 1, 0}, 8, 4};
    ipc::SrqOpReq tag{};
    tag.srq = 2;
    tag.opcode = IBV_WR_TAG_ADD;
    tag.num_sge = 1;
    tag.tag = 0x42;
    tag.mask = ~0ull;
    tag.sge = {addr, 64, 0};
    seeds.push_back(Conversation(true)
                        .add<Op::AllocPd>()
                        .add<Op::CreateCq>({16, 0, 0, 0})
                        .add<Op::OpenXrcd>({-1, 0})
                        .add<Op::CreateSrqEx>(xsrq)
                        .add<Op::CreateQp>(qp_req(IBV_QPT_XRC_RECV, 0, 0, 1))
                        .add<Op::OpenQp>({1, 0, IBV_QPT_XRC_RECV, 0})
                        .add<Op::CreateSrqEx>(tm)
                        .add<Op::SrqOps>(tag)
                        .add<Op::CloseXrcd>({1, 0}));
    // Raw packet pieces: a WQ, an indirection table (the QPs need CAP_NET_RAW).
    ipc::CreateWqReq wq{};
    wq.pd = 1;
    wq.cq = 1;
    wq.max_wr = 16;
    wq.max_sge = 1;
    ipc::CreateRwqIndTableReq table{};
    table.log_size = 0;
    table.wqs[0] = 1;
    seeds.push_back(Conversation(true)
                        .add<Op::AllocPd>()
                        .add<Op::CreateCq>({16, 0, 0, 0})
                        .add<Op::CreateWq>(wq)
                        .add<Op::ModifyWq>({1, IBV_WQ_ATTR_STATE, IBV_WQS_RDY, 0, 0, 0})
                        .add<Op::CreateRwqIndTable>(table)
                        .add<Op::DestroyRwqIndTable>({1, 0})
                        .add<Op::DestroyWq>({1, 0}));

    for (size_t i = 0; i < seeds.size(); ++i) {
        std::string path = std::string(argv[1]) + "/seed-" + std::to_string(i);
        if (!seeds[i].write(path)) {
            std::perror(path.c_str());
            return 1;
        }
    }
    return 0;
}
