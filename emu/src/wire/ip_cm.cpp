#include "emu/wire/ip_cm.h"

#include <cstring>

namespace emu::wire::ipcm {

std::array<uint8_t, 16> from_ipv4(uint32_t addr) {
    std::array<uint8_t, 16> a{};
    std::memcpy(a.data() + 12, &addr, 4);
    return a;
}

uint32_t to_ipv4(const std::array<uint8_t, 16>& a) {
    uint32_t addr;
    std::memcpy(&addr, a.data() + 12, 4);
    return addr;
}

// Byte 0 version, byte 1 IP version in bits 7:4, bytes 2-3 source port, then the source and
// destination addresses of 16 bytes each.
void encode(const Header& h, uint8_t* out) {
    out[0] = h.version;
    out[1] = static_cast<uint8_t>(h.ip_version << 4);
    out[2] = static_cast<uint8_t>(h.src_port >> 8);
    out[3] = static_cast<uint8_t>(h.src_port);
    std::memcpy(out + 4, h.src.data(), 16);
    std::memcpy(out + 20, h.dst.data(), 16);
}

HeaderCheck decode(const uint8_t* in, Header& h) {
    h.version = in[0];
    h.ip_version = in[1] >> 4;
    h.src_port = static_cast<uint16_t>(in[2] << 8 | in[3]);
    std::memcpy(h.src.data(), in + 4, 16);
    std::memcpy(h.dst.data(), in + 20, 16);
    if (h.version != kVersion) return HeaderCheck::BadVersion;
    if (h.ip_version != 4 && h.ip_version != 6) return HeaderCheck::BadIpVersion;
    return HeaderCheck::Ok;
}

const char* describe(HeaderCheck c) {
    switch (c) {
    case HeaderCheck::Ok:
        return "ok";
    case HeaderCheck::BadVersion:
        return "IP CM header version is not 0";
    case HeaderCheck::BadIpVersion:
        return "IP CM header names neither IPv4 nor IPv6";
    }
    return "?";
}

} // namespace emu::wire::ipcm
