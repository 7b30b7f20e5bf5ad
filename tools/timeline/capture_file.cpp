#include "capture_file.h"

namespace rdmaemu::timeline {
namespace {

constexpr uint32_t kSectionHeader = 0x0A0D0D0A, kInterfaceDescription = 1, kEnhancedPacket = 6;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kOptComment = 1, kOptIfTsresol = 9;
constexpr uint16_t kLinktypeEthernet = 1;

uint32_t le32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint16_t le16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | p[1] << 8);
}
size_t pad4(size_t n) {
    return (n + 3) & ~size_t(3);
}

// Calls `each(code, value, length)` for the options in [p, end) up to opt_endofopt.
template <typename F> bool for_options(const uint8_t* p, const uint8_t* end, F each) {
    while (end - p >= 4) {
        uint16_t code = le16(p), len = le16(p + 2);
        if (code == 0) return true;
        if (size_t(end - p) < 4 + pad4(len)) return false;
        each(code, p + 4, len);
        p += 4 + pad4(len);
    }
    return true;
}

// Ticks per second of an if_tsresol value: 10^n, or 2^n with the top bit set.
std::optional<uint64_t> ticks_per_second(uint8_t tsresol) {
    uint8_t n = tsresol & 0x7f;
    if (n > 63 || (!(tsresol & 0x80) && n > 19)) return std::nullopt;
    uint64_t v = 1;
    for (uint8_t i = 0; i < n; ++i)
        v *= (tsresol & 0x80) ? 2 : 10;
    return v;
}

} // namespace

bool looks_like_pcapng(const std::vector<uint8_t>& head) {
    return head.size() >= 4 && le32(head.data()) == kSectionHeader;
}

std::optional<std::string> parse_pcapng(const std::vector<uint8_t>& b, CaptureFile& out) {
    if (b.size() < 28 || le32(&b[0]) != kSectionHeader) return "not a pcapng capture";
    if (le32(&b[8]) != kByteOrderMagic) return "a big-endian pcapng capture (not nicsimd's)";
    uint64_t per_second = 1000000; // pcapng's default resolution: microseconds
    bool have_interface = false;
    for (size_t at = 0; at + 12 <= b.size();) {
        uint32_t type = le32(&b[at]), len = le32(&b[at + 4]);
        if (len < 12 || len % 4 != 0) return "a broken block at byte " + std::to_string(at);
        if (at + len > b.size()) break; // cut short: keep what came before
        if (le32(&b[at + len - 4]) != len)
            return "a block whose two lengths differ at byte " + std::to_string(at);
        const uint8_t* body = &b[at + 8];
        const uint8_t* end = &b[at + len - 4];
        if (type == kInterfaceDescription) {
            if (end - body < 8) return "a short interface block";
            if (le16(body) != kLinktypeEthernet) return "a capture of another link type";
            if (have_interface) return "a capture of several interfaces (not nicsimd's)";
            have_interface = true;
            std::optional<uint64_t> resolution = per_second;
            for_options(body + 8, end, [&](uint16_t code, const uint8_t* v, uint16_t n) {
                if (code == kOptIfTsresol && n >= 1) resolution = ticks_per_second(v[0]);
            });
            if (!resolution) return "an interface block with an unreadable time resolution";
            per_second = *resolution;
        } else if (type == kEnhancedPacket) {
            if (end - body < 20) return "a short packet block at byte " + std::to_string(at);
            uint64_t ticks = uint64_t(le32(body + 4)) << 32 | le32(body + 8);
            uint32_t captured = le32(body + 12);
            if (size_t(end - body - 20) < pad4(captured))
                return "a packet block longer than itself at byte " + std::to_string(at);
            CapturedFrame f;
            // 128-bit arithmetic: 2^64 ticks of nanoseconds times 10^9 would overflow.
            f.ns = static_cast<uint64_t>(static_cast<unsigned __int128>(ticks) * 1000000000u /
                                         per_second);
            f.bytes.assign(body + 20, body + 20 + captured);
            for_options(body + 20 + pad4(captured), end,
                        [&](uint16_t code, const uint8_t* v, uint16_t n) {
                            if (code == kOptComment) f.comment.assign(v, v + n);
                        });
            out.frames.push_back(std::move(f));
        }
        at += len;
    }
    return std::nullopt;
}

} // namespace rdmaemu::timeline
