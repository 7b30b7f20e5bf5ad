#include "gsi_port.h"

#include "cm_agent.h"
#include "emu/wire/cm_mad.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

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

void GsiPort::receive(const wire::IpEndpoint& from, const wire::Headers& h, const uint8_t* payload,
                      size_t len) {
    if (!agent_) return;
    // IBA 10.2.4: QP1 takes UD SENDs with its well-known Q_Key. Every host of the set sends from
    // the set's port, so a datagram from another port of theirs is no CM agent's; a peer outside
    // the set sends from a port of its own (rxe: per QP), which RoCE receivers ignore.
    const bool wrong_port = link_.in_set(from.addr) && from.port != link_.port();
    if (h.opcode != kUdSendOnly || h.deth.qkey != wire::cm::kGsiQkey ||
        h.pkey != wire::kDefaultPkey || wrong_port) {
        ++agent_->counters().rx_malformed;
        return;
    }
    agent_->receive(from.addr, payload, len);
}

uint64_t GsiPort::now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

void GsiPort::send_mad(const wire::IpAddress& dst_addr, const uint8_t* mad) {
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

bool GsiPort::routable(const wire::IpAddress& src_addr, const wire::IpAddress& dst_addr) {
    if (src_addr.is_ipv4() != dst_addr.is_ipv4()) return false;
    // connect(2) of a UDP socket asks the kernel's routing table and sends nothing.
    const int fd = ::socket(src_addr.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_storage src, dst;
    const socklen_t src_len = wire::to_sockaddr({src_addr, 0}, src);
    const socklen_t dst_len = wire::to_sockaddr({dst_addr, link_.port()}, dst);
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&src), src_len) == 0 &&
                    ::connect(fd, reinterpret_cast<sockaddr*>(&dst), dst_len) == 0;
    ::close(fd);
    return ok;
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
