#!/usr/bin/env python3
"""Recomputes the RoCE v2 ICRC of every IPv4 or IPv6 UDP 4791 packet in capture files (pcap or
pcapng) and compares it with the packet's last 4 bytes: an implementation independent of nicsimd's
(zlib's CRC-32, written from IBA vol. 1 and the wire note, not from our C++), so a shared
misreading would have to be made twice. Checks itself first against a RoCE v2 CNP captured from a ConnectX-4 Lx NIC (scapy's
test/contrib/roce.uts, ICRC bytes 82 fd 00 2a).

ICRC = CRC-32 (zlib: reflected 0xEDB88320, init and final xor 0xFFFFFFFF) over
    8 bytes 0xFF | IPv4 header with TOS, TTL and header checksum set to all ones |
    UDP header with its checksum set to all ones | BTH with byte 4 (FECN, BECN, resv) set to all
    ones | the rest of the UDP payload before the ICRC,
stored least significant byte first. Over IPv6 the IPv6 header (no extension headers) takes the
IPv4 header's place, with traffic class, flow label and hop limit set to all ones (A17.3.3; Linux
rxe_icrc.c: priority 0xf, flow_lbl 0xff 0xff 0xff, hop_limit 0xff).

usage: icrc_check.py [--expect-wrong N] FILE.pcap...   (classic pcap or pcapng)
exit 0 when there was at least one RoCE v2 packet and, in every file, every ICRC is right (or,
with --expect-wrong, exactly N are wrong: a capture of hosts started with --corrupt)
"""
import struct
import sys
import zlib

ROCE_PORT = 4791
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101

# Ethernet frame of the ConnectX-4 Lx CNP (opcode 0x81), ICRC included.
HARDWARE_CNP = bytes.fromhex(
    "e41d2dab2bc2 7cfe90643b32 0800"  # Ethernet
    " 45c2003c 718c4000 40119161 0a001101 0a001201"  # IPv4: TOS 0xc2, DF, TTL 64
    " 000012b7 00280000"  # UDP: dst 4791, checksum 0
    " 8100ffff 40000118 00000000"  # BTH: CNP (0x81), BECN, dest QP 0x118
    " 00000000000000000000000000000000"  # CNP padding
    " 82fd002a"  # ICRC
)


def icrc(ip_header: bytes, udp_payload_with_icrc: bytes, udp_header: bytes) -> int:
    ip = bytearray(ip_header)
    if ip[0] >> 4 == 6:
        ip[0] |= 0x0F  # traffic class, high nibble
        ip[1:4] = b"\xff\xff\xff"  # traffic class, low nibble; flow label
        ip[7] = 0xFF  # hop limit
    else:
        ip[1] = 0xFF  # TOS (DSCP, ECN)
        ip[8] = 0xFF  # TTL
        ip[10:12] = b"\xff\xff"  # header checksum
    udp = bytearray(udp_header)
    udp[6:8] = b"\xff\xff"  # checksum
    body = bytearray(udp_payload_with_icrc[:-4])
    body[4] = 0xFF  # BTH byte 4: FECN, BECN, reserved
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(body)) & 0xFFFFFFFF


def check_ip(packet: bytes):
    """(status, detail) for an IPv4 or IPv6 packet: status is None when it is not RoCE v2."""
    if len(packet) >= 40 and packet[0] >> 4 == 6:
        ihl = 40
        total = 40 + struct.unpack_from("!H", packet, 4)[0]
        if packet[6] != 17:
            return None, "not UDP (or IPv6 extension headers)"
        if total > len(packet):
            return "bad", f"IPv6 payload length {total - 40} but {len(packet)} bytes captured"
    elif len(packet) >= 20 and packet[0] >> 4 == 4:
        ihl = (packet[0] & 0x0F) * 4
        total = struct.unpack_from("!H", packet, 2)[0]
        if packet[9] != 17 or len(packet) < ihl + 8:
            return None, "not UDP"
        if total > len(packet) or total < ihl + 8:
            return "bad", f"IPv4 total length {total} but {len(packet)} bytes captured"
    else:
        return None, "neither IPv4 nor IPv6"
    packet = packet[:total]  # ignore link-layer padding
    udp = packet[ihl : ihl + 8]
    sport, dport, ulen = struct.unpack_from("!HHH", udp)
    if dport != ROCE_PORT:
        return None, "not UDP 4791"
    if ulen != total - ihl:
        return "bad", f"UDP length {ulen}, IP payload {total - ihl}"
    payload = packet[ihl + 8 :]
    if len(payload) < 12 + 4:
        return "bad", f"UDP payload of {len(payload)} bytes cannot hold BTH and ICRC"
    want = icrc(packet[:ihl], payload, udp)
    got = struct.unpack_from("<I", payload, len(payload) - 4)[0]
    opcode, psn = payload[0], struct.unpack_from("!I", payload, 8)[0] & 0xFFFFFF
    qpn = struct.unpack_from("!I", payload, 4)[0] & 0xFFFFFF
    what = f"opcode 0x{opcode:02x} qp 0x{qpn:x} psn {psn} len {len(payload)}"
    if want != got:
        return "bad", f"{what}: ICRC in packet 0x{got:08x}, computed 0x{want:08x}"
    return "ok", what


def frames(path):
    """Yields (number, linktype, frame bytes) of a classic pcap or a pcapng file (what nicsimd
    writes: one section, little- or big-endian). Every record must be whole."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        yield from pcapng_frames(path, data)
        return
    if len(data) < 24:
        raise ValueError(f"{path}: {len(data)} bytes, no pcap global header")
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise ValueError(f"{path}: neither pcap nor pcapng (magic {magic.hex()})")
    linktype = struct.unpack_from(endian + "I", data, 20)[0]
    off, n = 24, 0
    while off + 16 <= len(data):
        _, _, incl, orig = struct.unpack_from(endian + "IIII", data, off)
        off += 16
        if off + incl > len(data):
            raise ValueError(f"{path}: record {n + 1} truncated")
        n += 1
        if incl != orig:
            raise ValueError(f"{path}: record {n} cut to {incl} of {orig} bytes (snaplen)")
        yield n, linktype, data[off : off + incl]
        off += incl
    if off != len(data):
        raise ValueError(f"{path}: {len(data) - off} stray bytes at the end")


def pcapng_frames(path, data):
    """Enhanced Packet Blocks of a pcapng file (draft-ietf-opsawg-pcapng), numbered from 1."""
    if len(data) < 12:
        raise ValueError(f"{path}: {len(data)} bytes, no pcapng section header")
    bom = data[8:12]
    if bom == b"\x4d\x3c\x2b\x1a":
        endian = "<"
    elif bom == b"\x1a\x2b\x3c\x4d":
        endian = ">"
    else:
        raise ValueError(f"{path}: pcapng byte-order magic {bom.hex()}")
    linktypes = []
    off, n = 0, 0
    while off < len(data):
        if off + 12 > len(data):
            raise ValueError(f"{path}: {len(data) - off} stray bytes at the end")
        btype, blen = struct.unpack_from(endian + "II", data, off)
        if blen < 12 or blen % 4 or off + blen > len(data):
            raise ValueError(f"{path}: block at byte {off} (type {btype:#x}, {blen} bytes) truncated")
        if struct.unpack_from(endian + "I", data, off + blen - 4)[0] != blen:
            raise ValueError(f"{path}: block at byte {off}: trailing length differs")
        if btype == 1:  # Interface Description
            linktypes.append(struct.unpack_from(endian + "H", data, off + 8)[0])
        elif btype == 6:  # Enhanced Packet
            iface, _, _, incl, orig = struct.unpack_from(endian + "IIIII", data, off + 8)
            n += 1
            if iface >= len(linktypes):
                raise ValueError(f"{path}: packet {n} on interface {iface}, not described")
            if 28 + incl > blen - 4:
                raise ValueError(f"{path}: packet {n} longer than its block")
            if incl != orig:
                raise ValueError(f"{path}: packet {n} cut to {incl} of {orig} bytes (snaplen)")
            yield n, linktypes[iface], data[off + 28 : off + 28 + incl]
        off += blen


def ip_of(linktype, frame):
    if linktype == LINKTYPE_RAW:
        return frame
    if linktype == LINKTYPE_ETHERNET:
        if len(frame) >= 14 and frame[12:14] in (b"\x08\x00", b"\x86\xdd"):
            return frame[14:]
        return None
    raise ValueError(f"unsupported pcap link type {linktype}")


def self_test():
    status, detail = check_ip(ip_of(LINKTYPE_ETHERNET, HARDWARE_CNP))
    if status != "ok":
        sys.exit(f"icrc_check.py self-test failed on the ConnectX-4 Lx CNP: {detail}")


def main(args):
    expect_wrong = 0
    if args[:1] == ["--expect-wrong"] and len(args) >= 2:
        expect_wrong = int(args[1])
        args = args[2:]
    paths = args
    if not paths:
        sys.exit(__doc__)
    self_test()
    failed = False
    for path in paths:
        ok = bad = other = 0
        opcodes = {}
        for n, linktype, frame in frames(path):
            ip = ip_of(linktype, frame)
            if ip is None:
                other += 1
                continue
            status, detail = check_ip(ip)
            if status is None:
                other += 1
            elif status == "ok":
                ok += 1
                op = int(detail.split()[1], 16)
                opcodes[op] = opcodes.get(op, 0) + 1
            else:
                bad += 1
                if bad <= 10:
                    print(f"{path}: packet {n}: {detail}")
        ops = " ".join(f"0x{op:02x}:{c}" for op, c in sorted(opcodes.items()))
        print(f"{path}: {ok} RoCE v2 packets with a correct ICRC, {bad} wrong, {other} others; "
              f"opcodes {ops}")
        if bad != expect_wrong:
            print(f"{path}: {bad} packets with a wrong ICRC, expected {expect_wrong}")
            failed = True
        if not ok:
            print(f"{path}: no RoCE v2 packet with a correct ICRC")
            failed = True
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
