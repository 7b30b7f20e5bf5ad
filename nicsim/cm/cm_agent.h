// The host's communication manager: the rdma_cm the apps of this host talk to (through their CM
// sessions) and the InfiniBand CM agent on QP1 that talks to the other hosts' (IBA ch. 12), in
// one place, as Linux's cma.c and cm.c are for a kernel. It holds every CM ID of the host,
// resolves the set's addresses, sends and retransmits the CM messages and turns what arrives
// into the apps' events.
//
// Everything runs on the NIC's event loop, through CmEnv (clock, wire, wake-ups), so
// tests/protocol drives it with hand-made MADs. Untrusted input (MADs from anyone on the wire,
// requests from any session) is checked, counted and dropped; it never ends the daemon.
#pragma once

#include "cm_client.h"
#include "cm_config.h"
#include "cm_counters.h"
#include "cm_env.h"
#include "cm_id.h"
#include "emu/ipc/cm_protocol.h"
#include "emu/wire/ip_cm.h"
#include "support/json.h"

#include <rdma/rdma_cma.h>
#include <spdlog/logger.h>

#include <map>
#include <memory>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nicsim::cm {

namespace ipc = emu::ipc;
namespace mad = emu::wire::cm;

class CmAgent {
  public:
    using Address = emu::wire::IpAddress;

    CmAgent(CmEnv& env, CmConfig config, spdlog::logger& log);
    ~CmAgent();
    CmAgent(const CmAgent&) = delete;
    CmAgent& operator=(const CmAgent&) = delete;

    // The apps' requests (cm_protocol.h). Each returns 0 or the positive errno the kernel's
    // rdma_cm returns; an ID or channel of another session is EINVAL / ENOENT as for a bad
    // handle.
    int create_id(CmClient& c, const ipc::CmCreateIdReq& req, uint32_t& handle);
    int destroy_id(CmClient& c, uint32_t id, uint32_t& events_reported);
    int migrate_id(CmClient& c, const ipc::CmMigrateReq& req, uint32_t& events_reported);
    int bind(CmClient& c, const ipc::CmBindReq& req, ipc::CmIdInfo& info);
    int resolve_addr(CmClient& c, const ipc::CmResolveAddrReq& req);
    int resolve_route(CmClient& c, const ipc::CmResolveRouteReq& req);
    int query(CmClient& c, uint32_t id, ipc::CmIdInfo& info);
    int listen(CmClient& c, const ipc::CmListenReq& req, ipc::CmIdInfo& info);
    int connect(CmClient& c, const ipc::CmConnectReq& req);
    int accept(CmClient& c, const ipc::CmConnectReq& req);
    int reject(CmClient& c, const ipc::CmRejectReq& req);
    int establish(CmClient& c, uint32_t id);
    int disconnect(CmClient& c, uint32_t id);
    int notify(CmClient& c, const ipc::CmNotifyReq& req);
    int init_qp_attr(CmClient& c, const ipc::CmInitQpAttrReq& req, ipc::CmInitQpAttrReply& out);
    int set_option(CmClient& c, const ipc::CmSetOptionReq& req);
    int join_mcast(CmClient& c, const ipc::CmJoinMcastReq& req, uint32_t& mc);
    int leave_mcast(CmClient& c, const ipc::CmLeaveMcastReq& req, uint32_t& events_reported);
    // The oldest event of the channel (false: none), as CmGetEvent hands it to the app.
    bool get_event(CmClient& c, uint32_t channel, ipc::CmEventRecord& out);
    // rdma_destroy_event_channel: the channel's IDs go with it, as with closing the CM device.
    void destroy_channel(CmClient& c, uint32_t channel);
    // A session ends: its IDs go as if destroyed (the peers learn of it by REJ or DREQ).
    void drop_client(CmClient& c);

    // A MAD that arrived on QP1 from the host at `src_addr`.
    void receive(const Address& src_addr, const uint8_t* mad, size_t len);
    // Runs what is due: retransmissions, timeouts, address resolution, time wait.
    void on_timer();

    CmCounters& counters() { return counters_; }
    const CmCounters& counters() const { return counters_; }
    // The CM IDs of a session, for status: [{"id":..,"state":..,"cm_state":..,...}, ...].
    Json ids_json(const CmClient& c) const;
    size_t id_count() const { return ids_.size(); }

  private:
    CmId* find(CmClient& c, uint32_t handle);
    CmId* by_handle(uint32_t handle);
    CmId* by_comm_id(uint32_t local_comm_id, uint32_t remote_comm_id);
    void destroy(CmId& id);
    void reset_to_idle(CmId& id);
    void enter_timewait(CmId& id);
    void arm(CmId& id, Timer kind, uint64_t after_ms);
    void disarm(CmId& id);
    void fire(CmId& id);
    void on_timeout(CmId& id);
    uint32_t new_comm_id();
    bool known_host(const Address& addr) const;
    bool outside_peer(const Address& addr) const;

    // Addresses and ports.
    int bind_endpoint(CmId& id, const Endpoint& ep);
    int check_port(const CmId& id, bool reuse) const;
    uint16_t free_port(uint16_t ps);
    ipc::CmIdInfo info_of(const CmId& id) const;
    static mad::Gid gid_of(const Address& addr);

    // Events to the app.
    ipc::CmEventRecord event(const CmId& id, rdma_cm_event_type type, int status = 0) const;
    void deliver(CmId& id, const ipc::CmEventRecord& e);

    // Messages out (cm_send.cpp).
    void send(const Address& dst, const uint8_t* mad);
    void send_expecting(CmId& id, uint64_t timeout_ms, uint8_t retries);
    void send_req(CmId& id, const ipc::CmConnParam& p);
    void send_sidr_req(CmId& id, const ipc::CmConnParam& p);
    void send_rep(CmId& id, const ipc::CmConnParam& p);
    void send_sidr_rep(CmId& id, mad::SidrStatus status, uint32_t qpn, uint32_t qkey,
                       const uint8_t* data, size_t len);
    void send_rtu(CmId& id);
    void send_mra(CmId& id, mad::MsgResponse what);
    void send_rej(CmId& id, mad::RejReason reason, const uint8_t* ari, size_t ari_len,
                  const uint8_t* data, size_t len);
    void send_dreq(CmId& id);
    void send_drep(CmId& id);
    // Answers to a MAD that names no CM ID: sent back to `dst` with the MAD's transaction ID.
    void issue_rej(const Address& dst, uint64_t tid, uint32_t their_comm_id, mad::RejReason reason,
                   const uint8_t* ari = nullptr, size_t ari_len = 0);
    void issue_drep(const Address& dst, uint64_t tid, const mad::Dreq& dreq);
    void issue_sidr_rep(const Address& dst, uint64_t tid, const mad::SidrReq& req,
                        mad::SidrStatus status);

    // Messages in (cm_receive.cpp).
    void on_req(const Address& src, const mad::MadHeader& h, const mad::Req& m);
    void on_mra(const Address& src, const mad::Mra& m);
    void on_rej(const Address& src, const mad::Rej& m);
    void on_rep(const Address& src, const mad::MadHeader& h, const mad::Rep& m);
    void on_rtu(const Address& src, const mad::Rtu& m);
    void on_dreq(const Address& src, const mad::MadHeader& h, const mad::Dreq& m);
    void on_drep(const Address& src, const mad::Drep& m);
    void on_sidr_req(const Address& src, const mad::MadHeader& h, const mad::SidrReq& m);
    void on_sidr_rep(const Address& src, const mad::SidrRep& m);
    CmId* listener_for(uint64_t service_id, const Address& dst_addr, bool& any_on_port);
    CmId* new_passive_id(CmId& listener, const Address& src, const mad::MadHeader& h,
                         const emu::wire::ipcm::Header& ip);

    CmEnv& env_;
    CmConfig config_;
    spdlog::logger& log_;
    CmCounters counters_;
    uint32_t hi_tid_; // upper half of our transaction IDs (cm.c: the MAD agent's hi_tid)
    uint32_t last_handle_ = 0;
    uint32_t last_mc_ = 0;
    std::map<uint32_t, std::unique_ptr<CmId>> ids_;
    std::unordered_map<uint32_t, CmId*> by_local_comm_;
    std::map<std::pair<uint64_t, uint32_t>, uint32_t> by_remote_;     // (CA GUID, comm ID): passive
    std::map<std::pair<Address, uint32_t>, uint32_t> sidr_by_remote_; // (address, request ID)
    using Deadline = std::pair<uint64_t, uint32_t>;                   // (ms, handle)
    std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
    int pending_requests_ = 0; // passive IDs whose request no app has read yet
};

// cm.c's cm_ack_timeout: the QP's local ACK timeout for a path of `packet_life_time` to a CA of
// `ack_delay` (4.096 us * 2^x each): max(ack_delay, life + 1), one more when the other is close.
uint8_t ack_timeout(uint8_t ack_delay, uint8_t packet_life_time);

} // namespace nicsim::cm
