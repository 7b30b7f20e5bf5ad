// Two NICs in one process joined by a wire the test controls. Every packet a NIC transmits
// crosses to the other NIC's PacketRouter (the Engine's checks and dispatch) unless the test's
// fault plan drops it, duplicates it or holds it back behind the next one. Both run queues and
// timers are the Engine's QpScheduler and the clocks move only when the test advances them, so
// loss, go-back-N, retransmit timeouts and RNR waits come out the same on every run.
#pragma once

#include "protocol_rig.h"
#include "transport/packet_router.h"

#include <array>
#include <functional>
#include <optional>
#include <utility>

namespace proto {

inline constexpr const char* kHostB = "127.0.0.2";
inline constexpr uint16_t kRocePort = 4791;

// What the wire does with one packet.
enum class Fate { Deliver, Drop, Duplicate, Hold }; // Hold: arrives after the next one

// One packet the wire carried: the NIC it came from (0: a, 1: b) and what became of it.
struct Crossing {
    int from;
    Sent packet;
    Fate fate;
};

class TwoNicRig {
  public:
    // `from`: the sending NIC; `index`: how many packets crossed before this one.
    using FaultPlan = std::function<Fate(int from, const Sent& packet, size_t index)>;

    TwoNicRig() {
        a.env.peer = &b.env;
        b.env.peer = &a.env;
    }

    Rig a{kRigAddress};
    Rig b{kHostB};
    FaultPlan plan;            // none: every packet is delivered
    std::vector<Crossing> log; // every packet that crossed, in order

    // An RC QP on each NIC, connected to each other: a's (oa) sends from oa.sq_psn to b's
    // rq_psn, and back.
    std::pair<Qp*, Qp*> connect(QpOptions oa = {}, QpOptions ob = {}) {
        oa.state = ob.state = IBV_QPS_INIT;
        Qp& qa = a.create_qp(oa);
        Qp& qb = b.create_qp(ob);
        oa.dest_qpn = qb.qpn;
        oa.peer_address = kHostB;
        oa.rq_psn = ob.sq_psn;
        ob.dest_qpn = qa.qpn;
        ob.peer_address = kRigAddress;
        ob.rq_psn = oa.sq_psn;
        a.to_rtr(qa, oa);
        b.to_rtr(qb, ob);
        a.to_rts(qa, oa);
        b.to_rts(qb, ob);
        return {&qa, &qb};
    }

    // Carries packets until neither NIC has any left to send (the clocks stand still).
    void run() {
        for (int rounds = 0;; ++rounds) {
            RIG_REQUIRE(rounds < 100000); // two NICs that never stop talking
            bool moved = false;
            for (int side : {0, 1})
                for (Sent& s : host(side).env.take()) {
                    moved = true;
                    cross(side, std::move(s));
                }
            if (!moved && held_) {
                auto [side, s] = std::move(*held_);
                held_.reset();
                arrive(1 - side, s); // nothing came after it: it arrives last
                moved = true;
            }
            if (!moved) return;
        }
    }

    // Moves both clocks on by `us` (firing the timers that passed), then carries the packets.
    void advance(uint64_t us) {
        a.env.advance(us);
        b.env.advance(us);
        run();
    }

    // The packets from NIC `from` whose headers match `match`.
    size_t count(int from, const std::function<bool(const wire::Headers&)>& match) const {
        size_t n = 0;
        for (const Crossing& c : log)
            if (c.from == from && match(c.packet.h)) ++n;
        return n;
    }

    nicsim::LinkCounters& link(int side) { return counters_[side]; }

  private:
    Rig& host(int side) { return side == 0 ? a : b; }

    void cross(int from, Sent s) {
        Fate fate = plan ? plan(from, s, log.size()) : Fate::Deliver;
        log.push_back({from, s, fate});
        switch (fate) {
        case Fate::Drop:
            return;
        case Fate::Duplicate:
            arrive(1 - from, s);
            arrive(1 - from, s);
            break;
        case Fate::Hold:
            RIG_REQUIRE(!held_); // one packet held back at a time
            held_.emplace(from, std::move(s));
            return;
        case Fate::Deliver:
            arrive(1 - from, s);
            break;
        }
        if (held_) {
            auto [side, late] = std::move(*held_);
            held_.reset();
            arrive(1 - side, late);
        }
    }

    // Hands the packet to NIC `to` as its link would (from the sender's address and the set's
    // port), then lets that NIC run what it made runnable.
    void arrive(int to, const Sent& s) {
        std::vector<uint8_t> bytes = s.bytes;
        const wire::IpEndpoint from{*wire::IpAddress::parse(to == 0 ? kHostB : kRigAddress),
                                    kRocePort};
        RIG_REQUIRE(s.dst_addr == host(to).nic.device().config().address.ipv4());
        nicsim::IpFields ip;
        ip.tos = s.tclass;
        router(to).route(from, bytes.data(), bytes.size(), nullptr, ip);
        host(to).env.drain();
    }

    nicsim::PacketRouter& router(int side) { return routers_[side]; }

    std::array<nicsim::LinkCounters, 2> counters_{};
    std::array<nicsim::PacketRouter, 2> routers_{
        nicsim::PacketRouter(a.env, counters_[0], kRocePort,
                             [](const wire::IpAddress&) { return true; }),
        nicsim::PacketRouter(b.env, counters_[1], kRocePort,
                             [](const wire::IpAddress&) { return true; })};
    std::optional<std::pair<int, Sent>> held_;
};

} // namespace proto
