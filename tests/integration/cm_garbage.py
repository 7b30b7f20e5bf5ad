#!/usr/bin/env python3
"""Bad input for a host's CM agent: MADs to its QP1 with a valid ICRC, from SRC:PORT (an address
no host of the set has, on the RoCE port, so the packets pass the link and reach the agent):
truncated MADs, other management classes and versions, a Get instead of a Send, unknown and
unsupported attributes, messages naming no connection, and a flood of REQs to SERVICE_PORT;
every 5 ms one of each and 20 REQs, for SECONDS.

usage: cm_garbage.py SRC DST PORT SERVICE_PORT SECONDS
prints one "sent KIND N" line per kind; exit 0.
"""
import random
import socket
import struct
import sys
import time
import zlib

IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = getattr(socket, "IP_PMTUDISC_DO", 2)
UD_SEND_ONLY = 0x64
GSI_QKEY = 0x80010000
PS_TCP = 0x0106


def icrc(src, sport, dst, dport, body):
    udp_len = 8 + len(body) + 4
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0xFF, 20 + udp_len, 0, 0x4000, 0xFF, 17, 0xFFFF,
                     socket.inet_aton(src), socket.inet_aton(dst))
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0xFFFF)
    masked = bytearray(body)
    masked[4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + ip + udp + bytes(masked)) & 0xFFFFFFFF


def gid(addr):
    return b"\0" * 10 + b"\xff\xff" + socket.inet_aton(addr)


def mad(attr, message=b"", cls=0x07, version=2, method=0x03):
    header = struct.pack("!BBBBHHQHHI", 1, cls, version, method, 0, 0,
                         random.getrandbits(64), attr, 0, 0)
    return header + message.ljust(232, b"\0")


def req(src, dst, service_port):
    m = bytearray(232)
    struct.pack_into("!I", m, 0, random.getrandbits(32) | 1)            # local comm ID
    struct.pack_into("!Q", m, 8, PS_TCP << 16 | service_port)           # service ID
    struct.pack_into("!Q", m, 16, random.getrandbits(64))               # local CA GUID
    struct.pack_into("!I", m, 32, random.getrandbits(24) << 8 | 1)      # QPN, responder res.
    m[39] = 1                                                           # initiator depth
    m[43] = 20 << 3                                                     # timeout, RC
    struct.pack_into("!I", m, 44, random.getrandbits(24) << 8 | 20 << 3 | 7)
    struct.pack_into("!HBB", m, 48, 0xFFFF, 3 << 4 | 7, 15 << 4)        # P_Key, MTU, retries
    struct.pack_into("!HH", m, 52, 0xFFFF, 0xFFFF)
    m[56:72] = gid(src)
    m[72:88] = gid(dst)
    m[93] = 64
    m[95] = 17 << 3
    ip_cm = struct.pack("!BBH", 0, 0x40, random.getrandbits(16)) + \
        b"\0" * 12 + socket.inet_aton(src) + b"\0" * 12 + socket.inet_aton(dst)
    m[140:176] = ip_cm
    return mad(0x0010, bytes(m))


def main():
    src, dst, port, service_port = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    seconds = float(sys.argv[5])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
    s.bind((src, port))
    psn = 0

    def send(payload):
        nonlocal psn
        bth = struct.pack("!BBHII", UD_SEND_ONLY, 0, 0xFFFF, 1, psn)
        deth = struct.pack("!II", GSI_QKEY, 1)
        body = bth + deth + payload
        s.sendto(body + struct.pack("<I", icrc(src, port, dst, port, body)), (dst, port))
        psn = (psn + 1) & 0xFFFFFF

    def ids():
        return struct.pack("!II", random.getrandbits(32), random.getrandbits(32)) + \
            random.randbytes(16)

    kinds = {
        "truncated": lambda: mad(0x0014, ids())[:200],
        "not_cm": lambda: random.choice([mad(0x0014, ids(), cls=0x03),
                                         mad(0x0014, ids(), version=1),
                                         mad(0x0014, ids(), method=0x01)]),
        "unknown_attr": lambda: mad(0x0077, ids()),
        "unsupported": lambda: mad(0x0019, ids()),  # LAP: no alternate paths on RoCE
        "unmatched": lambda: mad(random.choice([0x0011, 0x0012, 0x0013, 0x0014, 0x0016]),
                                 ids()),
    }
    sent = dict.fromkeys(list(kinds) + ["req_flood"], 0)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for kind, make in kinds.items():
            send(make())
            sent[kind] += 1
        for _ in range(20):
            send(req(src, dst, service_port))
        sent["req_flood"] += 20
        time.sleep(0.005)
    for kind, n in sent.items():
        print(f"sent {kind} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
