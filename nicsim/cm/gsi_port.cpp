#include "gsi_port.h"

#include "cm_agent.h"
#include "emu/wire/cm_mad.h"

#include <arpa/inet.h>
#include <sys/random.h>

#include <chrono>

namespace nicsim::cm {

namespace wire = emu::wire;

namespace {

constexpr uint8_t kUdSendOnly = 0x64;

uint32_t seed() {
    uint32_t s = 0;
    if (::getrandom(&s, sizeof s, 0) != sizeof s)
        s = static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return s;
}

} // namespace

GsiPort::GsiPort(boost::asio::io_context& io, UdpLink& link)
    : io_(io), link_(link), timer_(io), rng_(seed()) {}

void GsiPort::receive(const sockaddr_in& from, const wire::Headers& h, const uint8_t* payload,
                      size_t len) {
    if (!agent_) return;
    // IBA 10.2.4: QP1 takes UD SENDs with its well-known Q_Key; every host of the set sends from
    // the set's port, so a datagram from elsewhere is no CM agent's.
    if (h.opcode != kUdSendOnly || h.deth.qkey != wire::cm::kGsiQkey ||
        h.pkey != wire::kDefaultPkey || ntohs(from.sin_port) != link_.port()) {
        ++agent_->counters().rx_malformed;
        return;
    }
    agent_->receive(from.sin_addr.s_addr, payload, len);
}

uint64_t GsiPort::now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

void GsiPort::send_mad(uint32_t dst_addr, const uint8_t* mad) {
    wire::Headers h;
    h.opcode = kUdSendOnly;
    h.dest_qpn = wire::cm::kGsiQpn;
    h.psn = psn_++ & 0xFFFFFF;
    h.deth.qkey = wire::cm::kGsiQkey;
    h.deth.src_qpn = wire::cm::kGsiQpn;
    uint8_t* packet = link_.packet_buffer();
    size_t len = wire::build(h, mad, wire::cm::kMadSize, packet);
    link_.send(dst_addr, packet, len);
}

void GsiPort::wake_at(uint64_t at_ms) {
    if (armed_for_ && armed_for_ <= at_ms) return;
    armed_for_ = at_ms;
    uint64_t now = now_ms();
    timer_.expires_after(std::chrono::milliseconds(at_ms > now ? at_ms - now : 0));
    timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;
        armed_for_ = 0;
        if (agent_) agent_->on_timer();
    });
}

} // namespace nicsim::cm
