#!/usr/bin/env python3
"""Seeds of the packet fuzz targets from real captures (rdmaemu up --pcap DIR, then traffic).

wire_parse gets RoCE v2 UDP payloads as they were on the wire, one per opcode and size class.
rc_receive gets what one host received over its RC QPs, in order, as that target's commands (a
set-up byte, then per packet: command 0, a 16-bit length, the bytes), with PSNs made relative as
the target reads them: a request's to the first request the host received, a response's to the
first request the host sent.

usage: seeds_from_pcap.py OUT_DIR HOST_PCAP...   (OUT_DIR/wire_parse, OUT_DIR/rc_receive)
"""
import hashlib
import os
import struct
import sys

ROCE_PORT = 4791
PER_SEED = 24  # packets per rc_receive seed


def frames(data):
    """Frame bytes of each record of a classic pcap or a pcapng file (Ethernet link type)."""
    if data[:4] == b"\x0a\x0d\x0d\x0a":  # pcapng: Enhanced Packet Blocks
        endian = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        at = 0
        while at + 12 <= len(data):
            btype, blen = struct.unpack_from(endian + "II", data, at)
            if blen < 12 or at + blen > len(data):
                break  # a file still being written may end in part of a block
            if btype == 6:
                incl = struct.unpack_from(endian + "I", data, at + 20)[0]
                yield data[at + 28:at + 28 + incl]
            at += blen
        return
    magic = struct.unpack_from("<I", data, 0)[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    at = 24
    while at + 16 <= len(data):
        incl = struct.unpack_from(endian + "IIII", data, at)[2]
        yield data[at + 16:at + 16 + incl]
        at += 16 + incl


def packets(path):
    """(src address, dst address, UDP payload) of each RoCE v2 datagram in a capture file."""
    with open(path, "rb") as f:
        data = f.read()
    for frame in frames(data):
        if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 15) * 4
        if ip[9] != 17:
            continue
        udp = ip[ihl:]
        if struct.unpack_from(">H", udp, 2)[0] != ROCE_PORT:
            continue
        yield ip[12:16], ip[16:20], bytes(udp[8:])


def is_rc(opcode):
    return opcode >> 5 == 0


def is_response(opcode):
    return 13 <= (opcode & 31) <= 18  # READ responses, ACK, atomic ACK


def psn_of(payload):
    return struct.unpack_from(">I", payload, 8)[0] & 0xFFFFFF


def with_psn(payload, psn):
    word = struct.unpack_from(">I", payload, 8)[0] & 0xFF000000 | psn & 0xFFFFFF
    return payload[:8] + struct.pack(">I", word) + payload[12:]


def write(directory, content):
    os.makedirs(directory, exist_ok=True)
    name = hashlib.sha1(content).hexdigest()
    with open(os.path.join(directory, name), "wb") as f:
        f.write(content)


def main():
    out, pcaps = sys.argv[1], sys.argv[2:]
    classes = set()
    for path in pcaps:
        seen = list(packets(path))
        for src, dst, p in seen:
            key = (p[0], min(len(p) // 256, 8))
            if key not in classes:
                classes.add(key)
                write(os.path.join(out, "wire_parse"), p)
        opcodes = set()
        for host in sorted({src for src, _, _ in seen}):
            write_received(out, host, seen, opcodes)


def write_received(out, host, seen, opcodes):
    """rc_receive seeds of what `host` received: the runs of packets that show an opcode no
    earlier seed has (a bulk transfer's thousand WRITE MIDDLEs make one seed, not fifty)."""
    received, first_in, first_out = [], None, None
    for src, dst, p in seen:
        if not is_rc(p[0]) or len(p) < 12:
            continue
        if src == host and not is_response(p[0]) and first_out is None:
            first_out = psn_of(p)
        if dst == host:
            if not is_response(p[0]) and first_in is None:
                first_in = psn_of(p)
            received.append(p)
    for i in range(0, len(received), PER_SEED):
        run = received[i:i + PER_SEED]
        if opcodes.issuperset(p[0] for p in run):
            continue
        opcodes.update(p[0] for p in run)
        seed = bytearray([0])
        for p in run:
            base = first_out if is_response(p[0]) else first_in
            p = with_psn(p, psn_of(p) - (base or 0))
            seed += bytes([0]) + struct.pack("<H", len(p)) + p
        write(os.path.join(out, "rc_receive"), bytes(seed))

if __name__ == "__main__":
    main()
