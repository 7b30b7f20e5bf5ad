// The NIC's device-wide state: the device, its key and QPN spaces and the live sessions.
// Per-session objects live in SessionObjects; this holds what sessions share.
#pragma once

#include "diag/error_log.h"
#include "diag/hw_counters.h"
#include "emu/keys.h"
#include "nic/device.h"
#include "nic/process_shares.h"
#include "objects/objects.h"
#include "support/counter_list.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace nicsim {

struct SessionObjects;
namespace cm {
class CmAgent;
}

// What the control path tells the data path (the transport engine), so it never holds on to
// an object the control path frees.
class DataPath {
  public:
    virtual ~DataPath() = default;
    virtual void qp_modified(Qp& qp, ibv_qp_state from) = 0;
    virtual void qp_destroying(Qp& qp) = 0;
    // The app destroys a QP: what it posted before goes out first. Hardware has sent it long
    // before the destroy command reaches the device; libfabric's rxd posts its last ACK and
    // closes its endpoint at once.
    virtual void send_posted(Qp& qp) { (void)qp; }
    // A receive work queue went to ERR: its posted receives complete with WR_FLUSH_ERR.
    virtual void wq_error(Wq& wq) { (void)wq; }
    // A completion the control path produces (tag operations on a tag-matching SRQ).
    virtual void complete(Cq& cq, const ibv_wc& wc) = 0;
    // A session's app kicked its doorbell: the bits of its doorbell page say what it posted.
    virtual void doorbell(SessionObjects& objects) = 0;
    // A session's doorbell page came (a device context opened) or goes (the session ends): the
    // NIC watches it while awake. `kick_fd`: the eventfd the app writes when the NIC sleeps;
    // true when the data path wakes on it itself, false when the session must wait on it and
    // call doorbell().
    virtual bool watch_doorbell(SessionObjects& objects, int kick_fd) {
        (void)objects, (void)kick_fd;
        return false;
    }
    virtual void unwatch_doorbell(SessionObjects& objects, int kick_fd) {
        (void)objects, (void)kick_fd;
    }
    // The wire's counters as a JSON object, for status.
    virtual Json counters_json() const = 0;
};

// Raw Ethernet frames through the port's loopback (raw packet QPs and flow steering); status
// shows them as raw_*.
#define NICSIM_RAW_COUNTERS(X)                                                                     \
    X(tx_frames)                                                                                   \
    X(tx_bytes)                                                                                    \
    X(delivered)     /* copies handed to a receive queue (one frame may go to several) */          \
    X(no_flow_drops) /* frames no flow matched */                                                  \
    X(no_wqe_drops)  /* a matching QP or WQ had no receive posted (or was not ready) */
struct RawCounters {
    NICSIM_COUNTER_SET(NICSIM_RAW_COUNTERS)
};

// Device-wide totals, checked against the device limits when objects are created.
struct ObjectTotals {
    uint32_t mw = 0;
    uint32_t pd = 0, mr = 0, cq = 0, qp = 0, srq = 0, ah = 0, comp_channel = 0;
    uint64_t dm_bytes = 0; // device memory allocated, against limits::kMaxDmSize
};

// Multicast traffic of this NIC; status shows it as mcast_*.
#define NICSIM_MCAST_COUNTERS(X)                                                                   \
    X(tx_packets)   /* UD sends to a multicast GID (one per send, before replication) */           \
    X(rx_packets)   /* multicast packets that arrived (well-formed, ICRC good) */                  \
    X(rx_delivered) /* copies handed to attached QPs (each may still be dropped there) */          \
    X(no_member)    /* packets dropped: no QP of this NIC is attached to the group */
struct McastCounters {
    NICSIM_COUNTER_SET(NICSIM_MCAST_COUNTERS)
};

// The NIC's poll loop (nicsim/daemon/poll_window.h); status shows them with the wire's.
#define NICSIM_POLL_COUNTERS(X)                                                                    \
    X(polls_suspended) /* a yield between polls kept the NIC off its CPU: polling stopped */       \
    X(cpu_moves)       /* a real-time NIC woken on its kicker's CPU moved to another */
struct PollCounters {
    NICSIM_COUNTER_SET(NICSIM_POLL_COUNTERS)
};

class Nic {
  public:
    explicit Nic(const Config& config) : device_(config), shares_(config.max_per_process) {}
    // Whether the NIC got real-time priority (PollLoop::claim_cpu): each session's doorbell
    // page says so.
    void set_realtime(bool on) { realtime_ = on; }
    bool realtime() const { return realtime_; }

    Device& device() { return device_; }
    const Device& device() const { return device_; }
    ObjectTotals& totals() { return totals_; }
    ProcessShares& shares() { return shares_; }

    // Memory keys: lkey and rkey of an MR are distinct, unguessable and device-unique.
    void register_mr(Mr& mr);
    void unregister_mr(Mr& mr);
    Mr* mr_by_rkey(uint32_t rkey) const;
    // Memory windows share the rkey space with MRs. A window keeps its index (the rkey's
    // upper 24 bits) for life and holds all 256 keys of it (emu::KeyAllocator::allocate_block);
    // a bind changes only the low byte, the consumer's key.
    void register_mw(Mw& mw);
    void rekey_mw(Mw& mw, uint8_t key);
    void unregister_mw(Mw& mw);
    Mw* mw_by_rkey(uint32_t rkey) const;  // the window whose rkey this is, key byte and all
    Mw* mw_by_index(uint32_t rkey) const; // the window of this rkey's index, whatever its key
    Mr* mr_by_lkey(uint32_t lkey) const;
    // Every registered MR and window, in no particular order (for explaining a bad key).
    void for_each_mr(const std::function<void(const Mr&)>& fn) const;
    void for_each_mw(const std::function<void(const Mw&)>& fn) const;

    // QPNs are random 24-bit values, so that a forged packet has to guess one; never 0 and 1
    // (the special QPs SMI, GSI) nor 0xFFFFFF (multicast). Returns 0 when the space is full.
    uint32_t register_qp(Qp& qp);
    void unregister_qp(const Qp& qp);
    Qp* qp_by_qpn(uint32_t qpn) const;

    // SRQ numbers (ibv_get_srq_num), 24-bit, device-wide: XRC requests name their target SRQ
    // by it. Returns 0 when the space is full.
    uint32_t register_srq(Srq& srq);
    void unregister_srq(const Srq& srq);
    Srq* srq_by_number(uint32_t srqn) const;

    // XRC domains. `file` (st_dev, st_ino) names a domain shared by all who open that file;
    // nullptr makes a new one. The errno of ibv_open_xrcd: EAGAIN when the file names no
    // domain and O_CREAT is not given, EINVAL when it names one and O_EXCL is given.
    int open_xrcd(const std::pair<uint64_t, uint64_t>* file, int oflags, Xrcd** out);
    void close_xrcd(Xrcd& xrcd); // one handle fewer; the last frees it

    // A shared XRC_RECV QP whose creator let go while others still have it open lives here
    // until the last of them closes it.
    void keep_orphan(std::unique_ptr<Qp> qp);
    void drop_orphan(const Qp& qp);
    // Multicast groups (IBA 10.5): membership is per NIC. A group is the QPNs attached to an
    // MGID, in attach order. Attaching a QP that is attached already is a no-op (0). ENOMEM
    // when a limit of device_limits.h would be exceeded: groups, QPs per group, attachments.
    int mcast_attach(Qp& qp, const Mgid& mgid);
    // 0, or EINVAL when the QP is not attached to the group.
    int mcast_detach(Qp& qp, const Mgid& mgid);
    void mcast_detach_all(Qp& qp);
    // The QPNs attached to `mgid` (16 bytes); nullptr when the group has none.
    const std::vector<uint32_t>* mcast_members(const uint8_t* mgid) const;
    size_t mcast_group_count() const { return groups_.size(); }
    uint32_t mcast_attachments() const { return mcast_attachments_; }
    McastCounters& mcast_counters() { return mcast_counters_; }
    const McastCounters& mcast_counters() const { return mcast_counters_; }
    // The transport's drops of all QPs, those destroyed included.
    DropCounters& drops() { return drops_; }
    const DropCounters& drops() const { return drops_; }

    // Why things failed lately (status), and the transport's totals.
    ErrorLog& errors() { return errors_; }
    const ErrorLog& errors() const { return errors_; }
    HwCounters& hw() { return hw_; }
    const HwCounters& hw() const { return hw_; }
    // Bytes the host's reliable QPs sent that are not acknowledged yet, a path MTU per PSN (each
    // QP keeps its share in RequesterState::counted_in_flight; transport::count_in_flight
    // updates both).
    uint64_t& bytes_in_flight() { return bytes_in_flight_; }
    // The host's window served in turns (engines.h): the QPs waiting for one, by QPN, first
    // come first served; the bytes reserved for turns not yet sent; the QP whose turn is the
    // escape (0: none).
    std::deque<uint32_t>& window_queue() { return window_queue_; }
    const std::deque<uint32_t>& window_queue() const { return window_queue_; }
    uint64_t& window_reserved() { return window_reserved_; }
    uint32_t& window_escape_qpn() { return window_escape_qpn_; }
    // The receive buffer of the host's link socket as the kernel accounts it (0: no link, as in
    // the protocol rigs). The peers' are alike: every host of a set runs with the same rights.
    void set_link_receive_buffer(uint64_t bytes) { link_receive_buffer_ = bytes; }
    uint64_t link_receive_buffer() const { return link_receive_buffer_; }

    uint32_t next_session_id() { return ++last_session_id_; }

    // Flow steering: every session's rules, lowest priority value first (then oldest first),
    // the order frames are matched in.
    void add_flow(Flow& flow);
    void remove_flow(const Flow& flow);
    const std::vector<Flow*>& flows() const { return flows_; }
    PollCounters& poll_counters() { return poll_counters_; }
    const PollCounters& poll_counters() const { return poll_counters_; }
    RawCounters& raw_counters() { return raw_counters_; }
    const RawCounters& raw_counters() const { return raw_counters_; }
    // Numbers the app sees for WQs and indirection tables (never reused while the NIC runs).
    uint32_t next_wq_num() { return ++last_wq_num_ & 0xffffff; }
    uint32_t next_ind_table_num() { return ++last_ind_table_num_; }

    DataPath* data_path() const { return data_path_; }
    void set_data_path(DataPath* dp) { data_path_ = dp; }
    // The host's communication manager (nicsim/cm), for CM sessions; null without one.
    cm::CmAgent* cm() const { return cm_; }
    void set_cm(cm::CmAgent* cm) { cm_ = cm; }

  private:
    bool realtime_ = false;
    Device device_;
    emu::KeyAllocator keys_;
    std::unordered_map<uint32_t, Mr*> by_rkey_, by_lkey_;
    std::unordered_map<uint32_t, Mw*> mw_by_index_; // by rkey >> 8
    std::unordered_map<uint32_t, Qp*> by_qpn_;
    std::unordered_map<uint32_t, Srq*> by_srqn_;
    uint32_t next_srqn_ = 1;
    std::unordered_map<uint32_t, std::unique_ptr<Xrcd>> xrcds_;
    std::map<std::pair<uint64_t, uint64_t>, Xrcd*> xrcd_by_file_;
    uint32_t next_xrcd_id_ = 1;
    std::unordered_map<uint32_t, std::unique_ptr<Qp>> orphans_; // by QPN
    uint32_t last_session_id_ = 0;
    std::vector<Flow*> flows_;
    RawCounters raw_counters_;
    PollCounters poll_counters_;
    uint32_t last_wq_num_ = 0;
    uint32_t last_ind_table_num_ = 0;
    std::map<Mgid, std::vector<uint32_t>> groups_;
    uint32_t mcast_attachments_ = 0;
    McastCounters mcast_counters_;
    DropCounters drops_;
    ErrorLog errors_;
    HwCounters hw_;
    uint64_t bytes_in_flight_ = 0;
    uint64_t link_receive_buffer_ = 0;
    std::deque<uint32_t> window_queue_;
    uint64_t window_reserved_ = 0;
    uint32_t window_escape_qpn_ = 0;
    ObjectTotals totals_;
    ProcessShares shares_;
    DataPath* data_path_ = nullptr;
    cm::CmAgent* cm_ = nullptr;
};

} // namespace nicsim
