#!/usr/bin/env python3
"""Captures the RoCE v2 packets (UDP port 4791, IPv4 or IPv6) crossing one network interface, both
directions, into a classic pcap file, as tcpdump would: the VM image has neither tcpdump nor tshark,
and the interop checks want what is on the wire (rxe's IP IDs, our per-packet datagrams), not what
either end recorded. Stops on SIGTERM or SIGINT and says how many packets it wrote and how many
the kernel dropped before it could read them.

usage: wire_capture.py IFACE OUT.pcap READY_FILE
  (READY_FILE is created once the socket is bound: start the traffic after it appears)
"""
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_RCVBUFFORCE = 33
ROCE_PORT = 4791
LINKTYPE_ETHERNET = 1


def udp_ports(frame: bytes):
    """(source, destination) of an Ethernet frame's UDP header, or None."""
    if len(frame) < 14:
        return None
    ethertype = struct.unpack_from("!H", frame, 12)[0]
    if ethertype == 0x0800 and len(frame) >= 34 and frame[23] == 17:
        udp = 14 + (frame[14] & 0x0F) * 4
    elif ethertype == 0x86DD and len(frame) >= 62 and frame[20] == 17:
        udp = 14 + 40
    else:
        return None
    if len(frame) < udp + 8:
        return None
    return struct.unpack_from("!HH", frame, udp)


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    iface, out_path, ready = sys.argv[1:]
    stop = False

    def on_signal(_sig, _frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    # A deep queue: Python reads slower than a burst arrives, and rmem_max (212992 by default)
    # would cap SO_RCVBUF; the checks run as root.
    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 256 << 20)
    sock.bind((iface, 0))
    sock.settimeout(0.2)
    written = 0
    with open(out_path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET))
        open(ready, "w").close()
        while not stop:
            try:
                frame = sock.recv(65535)
            except socket.timeout:
                continue
            except InterruptedError:
                continue
            ports = udp_ports(frame)
            if ports is None or ROCE_PORT not in ports:
                continue
            now = time.time()
            out.write(struct.pack("<IIII", int(now), int((now % 1) * 1e6), len(frame), len(frame)))
            out.write(frame)
            written += 1
    seen, dropped = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    print(f"wire_capture: {written} RoCE v2 packets written from {iface} to {out_path}; "
          f"the kernel dropped {dropped} of {seen} frames before they were read")
    return 0


if __name__ == "__main__":
    sys.exit(main())
