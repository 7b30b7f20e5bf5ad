#include "net/pcap_writer.h"

#include "pcapng_read.h"
#include "temp_dir.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <array>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using nicsim::PcapWriter;
using pcapng_read::pad4;
namespace fs = std::filesystem;

namespace {

// A file name in a private temp dir, removed with it when the test ends.
struct TempFile {
    TempDir dir;
    fs::path path;
    explicit TempFile(const char* tag) : dir(std::string("pcap_") + tag) {
        path = dir.path / "capture.pcap";
    }
};

std::vector<uint8_t> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

sockaddr_in endpoint(const char* ip, uint16_t port) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    REQUIRE(inet_pton(AF_INET, ip, &sa.sin_addr) == 1);
    return sa;
}

uint16_t be16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

// Ones'-complement sum folded to 16 bits (a valid checksummed region sums to 0xffff).
uint16_t ones_sum(uint32_t sum, const uint8_t* p, size_t len) {
    for (; len >= 2; p += 2, len -= 2)
        sum += uint32_t(p[0] << 8 | p[1]);
    if (len) sum += uint32_t(p[0] << 8);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(sum);
}

// Standard reflected CRC-32 (as the ICRC uses).
uint32_t crc32(uint32_t crc, const uint8_t* p, size_t len) {
    crc = ~crc;
    for (size_t i = 0; i < len; ++i) {
        crc ^= p[i];
        for (int k = 0; k < 8; ++k)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
    }
    return ~crc;
}

// Runs a shell command and returns its stdout.
std::string run(const std::string& cmd) {
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        out.append(buf, n);
    pclose(p);
    return out;
}

bool have_tshark() {
    return std::system("command -v tshark >/dev/null 2>&1") == 0;
}

// Bytes in the file for the header blocks and for one packet of `payload` bytes.
constexpr size_t kHeaderBlocks = 52 + 32;
size_t packet_block(size_t payload, size_t comment = 0) {
    return 32 + pad4(42 + payload) + (comment ? 4 + pad4(comment) + 4 : 0);
}

} // namespace

TEST_CASE("pcap: header blocks, packets and synthesized headers", "[pcap]") {
    TempFile file("bytes");
    auto a = endpoint("127.0.0.1", 49152), b = endpoint("127.0.0.2", 4791);
    const std::vector<uint8_t> p1{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}; // odd length
    const std::vector<uint8_t> p2(1500, 0xab);
    const std::vector<uint8_t> p3; // empty payload
    using std::chrono::nanoseconds;
    {
        PcapWriter w;
        REQUIRE(w.open(file.path.string()));
        REQUIRE(w.write_udp(a, b, p1, nanoseconds(1700000000123456789LL)));
        REQUIRE(w.write_udp(b, a, p2, nanoseconds(1700000000123456790LL)));
        REQUIRE(w.write_udp(a, b, p3, nanoseconds(5)));
        REQUIRE(w.close());
        CHECK(w.close()); // idempotent
        CHECK(w.error().empty());
    }
    const auto bytes = read_file(file.path);
    REQUIRE(bytes.size() ==
            kHeaderBlocks + packet_block(p1.size()) + packet_block(p2.size()) + packet_block(0));
    pcapng_read::File f = pcapng_read::parse(bytes);
    CHECK(f.linktype == 1);
    CHECK(f.snaplen == 262144);
    CHECK(f.tsresol == 9); // nanoseconds

    struct Expect {
        const sockaddr_in *src, *dst;
        const std::vector<uint8_t>* payload;
        uint64_t ns;
    };
    const Expect expect[] = {{&a, &b, &p1, 1700000000123456789ull},
                             {&b, &a, &p2, 1700000000123456790ull},
                             {&a, &b, &p3, 5}};
    REQUIRE(f.packets.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
        const Expect& e = expect[i];
        const pcapng_read::Packet& pk = f.packets[i];
        CHECK(pk.ns == e.ns);
        CHECK(pk.comment.empty());
        REQUIRE(pk.frame.size() == 42 + e.payload->size());
        const uint8_t* eth = pk.frame.data();
        const uint8_t* ip = eth + 14;
        const uint8_t* udp = ip + 20;
        // Ethernet: dst MAC, src MAC (02:52:<IPv4>), IPv4 ethertype.
        CHECK((eth[0] == 0x02 && eth[1] == 0x52 && eth[6] == 0x02 && eth[7] == 0x52));
        CHECK(std::memcmp(eth + 2, &e.dst->sin_addr, 4) == 0);
        CHECK(std::memcmp(eth + 8, &e.src->sin_addr, 4) == 0);
        CHECK(be16(eth + 12) == 0x0800);
        // IPv4 as Linux sends it from our socket.
        CHECK(ip[0] == 0x45);
        CHECK(ip[1] == 0);
        CHECK(be16(ip + 2) == 28 + e.payload->size());
        CHECK(be16(ip + 4) == 0);
        CHECK(be16(ip + 6) == 0x4000);
        CHECK(ip[8] == 64);
        CHECK(ip[9] == 17);
        CHECK(std::memcmp(ip + 12, &e.src->sin_addr, 4) == 0);
        CHECK(std::memcmp(ip + 16, &e.dst->sin_addr, 4) == 0);
        CHECK(ones_sum(0, ip, 20) == 0xffff); // header checksum valid
        // UDP: ports, length, valid checksum over the pseudo-header.
        CHECK(std::memcmp(udp, &e.src->sin_port, 2) == 0);
        CHECK(std::memcmp(udp + 2, &e.dst->sin_port, 2) == 0);
        CHECK(be16(udp + 4) == 8 + e.payload->size());
        CHECK(be16(udp + 6) != 0);
        uint32_t pseudo = ones_sum(0, ip + 12, 8) + 17u + be16(udp + 4);
        CHECK(ones_sum(pseudo, udp, 8 + e.payload->size()) == 0xffff);
        CHECK(std::equal(e.payload->begin(), e.payload->end(), udp + 8));
    }
}

TEST_CASE("pcap: a packet carries its comment", "[pcap]") {
    TempFile file("comment");
    auto a = endpoint("127.0.0.1", 4791), b = endpoint("127.0.0.2", 4791);
    const std::vector<uint8_t> payload(30, 5);
    const std::string why = "rdmaemu: dropped by the fault injector (--drop): never sent";
    {
        PcapWriter w;
        REQUIRE(w.open(file.path.string()));
        REQUIRE(w.write_udp(a, b, payload, PcapWriter::now(), nullptr, why));
        REQUIRE(w.write_udp(a, b, payload, PcapWriter::now()));
        REQUIRE(w.close());
    }
    const auto bytes = read_file(file.path);
    CHECK(bytes.size() == kHeaderBlocks + packet_block(30, why.size()) + packet_block(30));
    pcapng_read::File f = pcapng_read::parse(bytes);
    REQUIRE(f.packets.size() == 2);
    CHECK(f.packets[0].comment == why);
    CHECK(f.packets[1].comment.empty());
    if (!have_tshark()) {
        WARN("tshark not installed; not asking it");
        return;
    }
    CHECK(run("tshark -r '" + file.path.string() + "' -T fields -e frame.comment 2>/dev/null") ==
          why + "\n\n");
}

TEST_CASE("pcap: writes are buffered until flush", "[pcap]") {
    TempFile file("flush");
    PcapWriter w;
    REQUIRE(w.open(file.path.string()));
    CHECK(fs::file_size(file.path) == kHeaderBlocks); // the header blocks go out at once
    const std::vector<uint8_t> payload(100, 1);
    auto a = endpoint("127.0.0.1", 1000), b = endpoint("127.0.0.2", 4791);
    REQUIRE(w.write_udp(a, b, payload, PcapWriter::now()));
    CHECK(fs::file_size(file.path) == kHeaderBlocks);
    REQUIRE(w.flush());
    CHECK(fs::file_size(file.path) == kHeaderBlocks + packet_block(100));
    // A flushed file is a whole capture while the writer keeps it open: a reader sees the packet.
    CHECK(pcapng_read::parse(read_file(file.path)).packets.size() == 1);
    if (have_tshark())
        CHECK(run("tshark -r '" + file.path.string() + "' -T fields -e udp.length 2>/dev/null") ==
              "108\n");
    // Many records overflow the buffer and reach the file without an explicit flush.
    for (int i = 0; i < 5000; ++i)
        REQUIRE(w.write_udp(a, b, payload, PcapWriter::now()));
    CHECK(fs::file_size(file.path) > kHeaderBlocks + packet_block(100));
    REQUIRE(w.close());
    CHECK(fs::file_size(file.path) == kHeaderBlocks + 5001 * packet_block(100));
}

TEST_CASE("pcap: errors are reported, never thrown", "[pcap]") {
    auto a = endpoint("127.0.0.1", 1000), b = endpoint("127.0.0.2", 4791);
    const std::vector<uint8_t> payload(64, 0);
    SECTION("not open") {
        PcapWriter w;
        CHECK_FALSE(w.write_udp(a, b, payload, PcapWriter::now()));
        CHECK_FALSE(w.flush());
        CHECK(w.close());
    }
    SECTION("cannot create") {
        PcapWriter w;
        CHECK_FALSE(w.open("/nonexistent-dir/x.pcap"));
        CHECK_FALSE(w.is_open());
        CHECK(w.error().find("/nonexistent-dir") != std::string::npos);
        CHECK_FALSE(w.write_udp(a, b, payload, PcapWriter::now()));
        CHECK_FALSE(w.close());
    }
    SECTION("a full disk: the first failing call reports it, later calls just return false") {
        // A file size limit stands in for the full disk: writes past it fail with EFBIG.
        TempFile file("full");
        rlimit old{};
        REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
        auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit small = old;
        small.rlim_cur = 1000;
        REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
        int stops = 0;
        std::string stop_reason;
        PcapWriter w;
        bool opened = w.open(file.path.string(), PcapWriter::kNoLimit, [&](const std::string& why) {
            ++stops;
            stop_reason = why;
        });
        bool wrote = opened && w.write_udp(a, b, std::vector<uint8_t>(2000), PcapWriter::now());
        bool flushed = w.flush();
        const std::string first = w.error();
        bool later_write = w.write_udp(a, b, payload, PcapWriter::now());
        bool closed = w.close();
        setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, old_handler);
        CHECK(opened);
        CHECK(wrote); // buffered
        CHECK_FALSE(flushed);
        CHECK(first.find("File too large") != std::string::npos);
        CHECK_FALSE(later_write);
        CHECK_FALSE(closed);
        CHECK(w.error() == first);
        CHECK(stops == 1); // told once, with the reason
        CHECK(stop_reason == first);
    }
    SECTION("a payload too big for IPv4 is refused, the file stays usable") {
        TempFile file("big");
        PcapWriter w;
        REQUIRE(w.open(file.path.string()));
        std::vector<uint8_t> big(PcapWriter::kMaxUdpPayload + 1);
        CHECK_FALSE(w.write_udp(a, b, big, PcapWriter::now()));
        CHECK_FALSE(w.error().empty());
        big.pop_back();
        CHECK(w.write_udp(a, b, big, PcapWriter::now()));
        CHECK(w.close());
        CHECK(fs::file_size(file.path) == kHeaderBlocks + packet_block(big.size()));
    }
}

TEST_CASE("pcap: the limit stops the capture at a whole record, once", "[pcap]") {
    TempFile file("limit");
    auto a = endpoint("127.0.0.1", 1000), b = endpoint("127.0.0.2", 4791);
    const std::vector<uint8_t> payload(100, 7);
    const uint64_t record = packet_block(100);
    const uint64_t limit = kHeaderBlocks + 2 * record + record / 2; // two records and a half
    std::vector<std::string> stops;
    PcapWriter w;
    REQUIRE(
        w.open(file.path.string(), limit, [&](const std::string& why) { stops.push_back(why); }));
    CHECK(w.write_udp(a, b, payload, PcapWriter::now()));
    CHECK(w.write_udp(a, b, payload, PcapWriter::now()));
    CHECK_FALSE(w.limit_reached());
    CHECK_FALSE(w.write_udp(a, b, payload, PcapWriter::now())); // would pass the limit
    CHECK(w.limit_reached());
    CHECK_FALSE(w.is_open());
    CHECK_FALSE(w.write_udp(a, b, std::vector<uint8_t>(1), PcapWriter::now())); // stays stopped
    REQUIRE(stops.size() == 1);
    CHECK(stops[0].find("capture limit of " + std::to_string(limit) + " bytes reached") !=
          std::string::npos);
    CHECK(w.error().empty()); // a limit is not an error
    CHECK(w.close());
    CHECK(fs::file_size(file.path) == kHeaderBlocks + 2 * record);
}

TEST_CASE("pcap: the file is new and 0600 whatever the umask, never written through a link",
          "[pcap]") {
    TempDir dir("pcap_files");
    const std::string path = dir / "host1.pcap";
    SECTION("umask 000 still gives 0600") {
        mode_t old = umask(0);
        PcapWriter w;
        bool opened = w.open(path);
        umask(old);
        REQUIRE(opened);
        struct stat st {};
        REQUIRE(stat(path.c_str(), &st) == 0);
        CHECK((st.st_mode & 07777) == 0600);
    }
    SECTION("a capture of ours from an earlier run is replaced, not appended to") {
        { std::ofstream(path) << std::string(5000, 'x'); }
        PcapWriter w;
        REQUIRE(w.open(path));
        REQUIRE(w.close());
        CHECK(fs::file_size(path) == kHeaderBlocks);
    }
    SECTION("a symbolic link there is refused and its target untouched") {
        const std::string victim = dir / "victim";
        { std::ofstream(victim) << "secret"; }
        fs::create_symlink(victim, path);
        PcapWriter w;
        CHECK_FALSE(w.open(path));
        CHECK(w.error().find(path + " is a symbolic link (to " + victim + ")") !=
              std::string::npos);
        CHECK(fs::file_size(victim) == 6);
        CHECK(fs::is_symlink(path));
    }
    SECTION("a directory others can write is refused") {
        fs::permissions(dir.path, fs::perms::all);
        PcapWriter w;
        CHECK_FALSE(w.open(path));
        CHECK(w.error().find("is writable by group or others (mode 0777)") != std::string::npos);
        CHECK_FALSE(fs::exists(path));
    }
}

TEST_CASE("pcap: tshark decodes a RoCE v2 SEND_ONLY with nothing malformed", "[pcap][tshark]") {
    if (!have_tshark()) {
        WARN("tshark not installed; skipping");
        return;
    }
    auto src = endpoint("127.0.0.1", 49153), dst = endpoint("127.0.0.2", 4791);
    std::vector<uint8_t> roce{
        0x04,                       // opcode: RC SEND_ONLY
        0x30,                       // SE 0, M 0, PadCnt 3, TVer 0
        0xff, 0xff,                 // P_Key
        0x00,                       // FECN/BECN/resv
        0x00, 0x00, 0x12,           // DestQP 0x12
        0x80,                       // AckReq
        0x0a, 0x0b, 0x0c,           // PSN 0x0a0b0c
        'h',  'e',  'l',  'l', 'o', // 5 bytes of payload
        0,    0,    0,              // 3 bytes of pad
    };

    // ICRC: CRC-32 over 8 x 0xff, the IPv4 and UDP headers as the writer makes them and the
    // RoCE packet, with the variant fields (TOS, TTL, IP checksum, UDP checksum, BTH byte 4)
    // set to all ones; stored least significant byte first.
    const uint16_t udp_len = uint16_t(8 + roce.size() + 4);
    std::vector<uint8_t> masked(8, 0xff);
    const uint8_t ip[20] = {0x45,
                            0xff,
                            uint8_t((20 + udp_len) >> 8),
                            uint8_t(20 + udp_len),
                            0,
                            0,
                            0x40,
                            0,
                            0xff,
                            17,
                            0xff,
                            0xff,
                            127,
                            0,
                            0,
                            1,
                            127,
                            0,
                            0,
                            2};
    const uint8_t udp[8] = {uint8_t(49153 >> 8),   uint8_t(49153 & 0xff), 0x12, 0xb7,
                            uint8_t(udp_len >> 8), uint8_t(udp_len),      0xff, 0xff};
    masked.insert(masked.end(), ip, ip + 20);
    masked.insert(masked.end(), udp, udp + 8);
    masked.insert(masked.end(), roce.begin(), roce.end());
    masked[8 + 20 + 8 + 4] = 0xff;
    const uint32_t icrc = crc32(0, masked.data(), masked.size());
    for (int i = 0; i < 4; ++i)
        roce.push_back(uint8_t(icrc >> (8 * i)));

    TempFile file("tshark");
    {
        PcapWriter w;
        REQUIRE(w.open(file.path.string()));
        REQUIRE(w.write_udp(src, dst, roce, PcapWriter::now()));
        REQUIRE(w.close());
    }
    // Checksum validation on, so a bad IPv4 or UDP checksum would show as an expert error.
    const std::string base = "tshark -r '" + file.path.string() +
                             "' --disable-protocol rpcordma -o ip.check_checksum:TRUE" +
                             " -o udp.check_checksum:TRUE";
    const std::string fields =
        run(base + " -T fields -E separator=, -e ip.src -e udp.dstport -e infiniband.bth.opcode" +
            " -e infiniband.bth.psn -e infiniband.bth.destqp -e infiniband.bth.padcnt 2>/dev/null");
    INFO("tshark fields: " << fields);
    CHECK(fields == "127.0.0.1,4791,4,658188,0x000012,3\n");
    const std::string malformed =
        run(base + " -Y '_ws.malformed || _ws.expert.severity >= " + "warning' 2>/dev/null");
    INFO("tshark flagged: " << malformed);
    CHECK(malformed.empty());
    // And a correct ICRC (test helper checked against the standard CRC-32 check value).
    const char check[] = "123456789";
    CHECK(crc32(0, reinterpret_cast<const uint8_t*>(check), 9) == 0xCBF43926);
}
