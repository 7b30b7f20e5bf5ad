#include "emu/wire/ipv4_header.h"

#include <cstring>

namespace emu::wire {

namespace {
void put_be16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
} // namespace

void put_ipv4_fields(uint8_t* ip, const Ipv4Header& h) {
    ip[0] = 0x45; // version 4, IHL 5 (no options)
    ip[1] = h.tos;
    put_be16(ip + 2, static_cast<uint16_t>(kIpv4HeaderLength + h.payload_length));
    put_be16(ip + 4, h.id);
    put_be16(ip + 6, h.flags_frag);
    ip[8] = h.ttl;
    ip[9] = kIpProtoUdp;
    ip[10] = ip[11] = 0;
    std::memcpy(ip + 12, &h.src_addr, 4);
    std::memcpy(ip + 16, &h.dst_addr, 4);
}

void put_ipv4_header(uint8_t* ip, const Ipv4Header& h) {
    put_ipv4_fields(ip, h);
    put_be16(ip + 10, internet_checksum(internet_sum(0, ip, kIpv4HeaderLength)));
}

} // namespace emu::wire
