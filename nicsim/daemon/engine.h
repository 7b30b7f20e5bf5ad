// The NIC's data-path loop on the event loop: doorbells, packets from the wire, the run queue
// of QPs with packets to send, and the transport timers. It is the transport's TransportEnv.
#pragma once

#include "daemon/wake_set.h"
#include "diag/peer_reasons.h"
#include "dma/dma_engine.h"
#include "net/udp_link.h"
#include "nic/nic.h"
#include "transport/packet_router.h"
#include "transport/qp_scheduler.h"
#include "transport/transport_env.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace nicsim {

class Engine final : public DataPath, public TransportEnv {
  public:
    // `peers`: how refusals reach the NICs of the set's other hosts (nullptr: they do not).
    Engine(boost::asio::io_context& io, Nic& nic, UdpLink& link, spdlog::logger& log,
           PeerReasons* peers = nullptr);

    // DataPath
    void qp_modified(Qp& qp, ibv_qp_state from) override;
    void qp_destroying(Qp& qp) override;
    void send_posted(Qp& qp) override;
    void wq_error(Wq& wq) override;
    void complete(Cq& cq, const ibv_wc& wc) override;
    void doorbell(SessionObjects& objects) override;
    bool watch_doorbell(SessionObjects& objects, int kick_fd) override;
    void unwatch_doorbell(SessionObjects& objects, int kick_fd) override;

    // The poll loop's side (poll_loop.h). What it sleeps on.
    WakeSet& wake_set() { return wake_; }
    // One turn of the data path: the link's datagrams (`link_readable`), the queues whose
    // doorbell bits were set, a bounded turn of the run queue, then the turn's burst out. The
    // packets and queues it served (0: nothing to do).
    size_t turn(bool link_readable);
    // QPs wait in the run queue, or packets to this host itself in the link: the loop must not
    // sleep (no descriptor would wake it for them).
    bool runnable() const { return scheduler_.runnable() || link_.turn_pending(); }
    // Before sleeping: every session learns that the NIC sleeps (their next post kicks it);
    // false, staying awake, when a bit shows work after all.
    bool prepare_sleep();
    // Whether an app kicked from `cpu` since the last look (DoorbellPage::kicker_cpu).
    bool kicked_from(int cpu);
    void woke();
    Json counters_json() const override;

    // TransportEnv
    uint64_t now_us() override;
    uint8_t* packet_buffer() override { return link_.packet_buffer(); }
    void transmit(Qp& qp, const emu::wire::IpAddress& dst_addr, uint8_t* packet, size_t len,
                  uint8_t tclass) override;
    void transmit_multicast(Qp& qp, const uint8_t* mgid, uint8_t* packet, size_t len,
                            uint8_t tclass) override;
    void schedule(Qp& qp) override;
    void set_timer(Qp& qp, uint64_t at_us) override;
    DmaEngine& dma() override { return dma_; }
    // Packets for QP1 (the GSI: the CM's MADs) go to `gsi` (nicsim/cm/gsi_port.h).
    void set_gsi(PacketRouter::GsiReceiver gsi) { router_.set_gsi(std::move(gsi)); }
    Nic& nic() override { return nic_; }
    void async_event(int async_fd, ibv_event_type type, uint32_t handle, uint32_t reason) override;
    void tell_peer(const emu::wire::IpAddress& peer_addr, const PeerReason& reason) override;
    std::optional<PeerReason> peer_reason(const emu::wire::IpAddress& peer_addr, uint32_t qpn,
                                          uint32_t psn) override;
    spdlog::logger& log() override { return log_; }

  private:
    size_t serve_doorbell(SessionObjects& objects);
    size_t poll_doorbells();
    void arm_timer();

    Nic& nic_;
    UdpLink& link_;
    spdlog::logger& log_;
    PeerReasons* peers_;
    SegmentDma dma_;
    QpScheduler scheduler_;
    PacketRouter router_;
    boost::asio::steady_timer timer_;
    WakeSet wake_; // after timer_: Asio's reactor exists
    uint64_t timer_armed_for_ = 0;
    std::vector<SessionObjects*> doorbells_; // sessions whose doorbell pages the NIC watches
    bool asleep_ = false;
};

} // namespace nicsim
