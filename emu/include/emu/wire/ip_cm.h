// IP addressing over the InfiniBand CM, as the RDMA CM (Linux's cma.c, rdma-core's librdmacm)
// does it: an rdma_cm port space and port become the CM service ID, and the first 36 bytes of a
// REQ's or SIDR_REQ's private data carry the IP addresses and the source port (the "IP CM"
// header, IBA annex A11 "RDMA IP CM Service"). The user's private data follows it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace emu::wire::ipcm {

inline constexpr size_t kHeaderSize = 36;
inline constexpr uint8_t kVersion = 0; // the header's own version (annex A11: 0)

// RDMA CM port spaces (enum rdma_port_space) as they appear in service IDs.
inline constexpr uint16_t kPsTcp = 0x0106;
inline constexpr uint16_t kPsUdp = 0x0111;
inline constexpr uint16_t kPsIb = 0x013F;
inline constexpr uint16_t kPsIpoib = 0x0002;

// Annex A11: service ID = 0x0000000001 << 24 | protocol << 16 | port, where the port spaces
// above already hold the 0x01 prefix (0x0106 = TCP, 0x0111 = UDP, 0x013F = any IB service).
constexpr uint64_t service_id(uint16_t port_space, uint16_t port) {
    return static_cast<uint64_t>(port_space) << 16 | port;
}
constexpr uint16_t port_space_of(uint64_t sid) {
    return static_cast<uint16_t>(sid >> 16);
}
constexpr uint16_t port_of(uint64_t sid) {
    return static_cast<uint16_t>(sid);
}
// True for a service ID of the IP-based range (0x0000000001xxxxxx).
constexpr bool is_ip_service(uint64_t sid) {
    return (sid >> 24) == 1;
}

struct Header {
    uint8_t version = kVersion;
    uint8_t ip_version = 4;        // 4 or 6 (the upper nibble of byte 1 on the wire)
    uint16_t src_port = 0;         // host order
    std::array<uint8_t, 16> src{}; // IPv4: in the last four bytes, the rest zero
    std::array<uint8_t, 16> dst{};
};

// IPv4 address (network order) <-> the header's 16-byte form.
std::array<uint8_t, 16> from_ipv4(uint32_t addr);
uint32_t to_ipv4(const std::array<uint8_t, 16>& a);

void encode(const Header& h, uint8_t* out); // kHeaderSize bytes
enum class HeaderCheck : uint8_t { Ok, BadVersion, BadIpVersion };
HeaderCheck decode(const uint8_t* in, Header& h); // kHeaderSize bytes
const char* describe(HeaderCheck c);

} // namespace emu::wire::ipcm
