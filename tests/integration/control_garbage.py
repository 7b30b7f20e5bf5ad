#!/usr/bin/env python3
"""Sends malformed requests to a nicsimd control socket (SOCK_SEQPACKET), one connection per case.

For each case the daemon must close that connection (replies before the close are allowed), and
a line naming the rejection must appear in its log. The framing is emu/include/emu/ipc/protocol.h:
Header {u32 magic "REMU", u16 version, u16 op, u32 length (whole message), u32 seq}, then exactly
the op's request struct; the reply starts with ReplyHeader {Header, i32 err, u32 reserved}.

usage: control_garbage.py SOCKET LOG
Prints one line per case; exits 1 if any case failed.
"""
import os
import random
import re
import socket
import struct
import sys
import time

MAGIC = 0x554D4552
# The protocol version the daemon speaks, from the header both sides are built from.
PROTOCOL_H = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "../../emu/include/emu/ipc/protocol.h")
VERSION = int(re.search(r"kVersion = (\d+);", open(PROTOCOL_H).read()).group(1))
OP_HELLO = 1
OP_ALLOC_PD = 6
HELLO_LEN = 16 + 8  # Header + HelloReq {u32 flags, u32 reserved}
ALLOC_PD_LEN = 16  # Header only (Empty request)
CLOSE_TIMEOUT = 3.0
LOG_TIMEOUT = 3.0

sock_path, log_path = sys.argv[1], sys.argv[2]
rng = random.Random(0x5EED)
failures = []


def header(magic=MAGIC, version=VERSION, op=OP_HELLO, length=HELLO_LEN, seq=1):
    return struct.pack("<IHHII", magic, version, op, length, seq)


def hello(seq=1, flags=0):
    return header(seq=seq) + struct.pack("<II", flags, 0)


def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(CLOSE_TIMEOUT)
    s.connect(sock_path)
    return s


def log_size():
    try:
        return os.path.getsize(log_path)
    except OSError:
        return 0


def new_log_since(offset):
    try:
        with open(log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def wait_closed(s):
    """Reads until the daemon closes the connection. Returns (closed, replies)."""
    replies = []
    deadline = time.monotonic() + CLOSE_TIMEOUT
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False, replies
        s.settimeout(left)
        try:
            data = s.recv(1 << 20)
        except socket.timeout:
            return False, replies
        except (ConnectionResetError, BrokenPipeError):
            return True, replies
        if not data:
            return True, replies
        replies.append(data)


def send_all(s, msgs):
    for m in msgs:
        try:
            s.send(m)
        except (BrokenPipeError, ConnectionResetError):
            return  # already closed by the daemon: fine


def describe_reply(r):
    if len(r) >= 24:
        magic, ver, op, length, seq, err, _ = struct.unpack("<IHHIIiI", r[:24])
        return f"reply(magic={magic:#x} op={op} len={length} seq={seq} err={err})"
    return f"reply({len(r)} bytes)"


def case(name, msgs, log_re, prelude_hello=False):
    """Opens a connection, optionally completes a Hello, sends msgs; expects close + log line."""
    offset = log_size()
    try:
        s = connect()
    except OSError as e:
        failures.append(f"{name}: cannot connect to {sock_path}: {e}")
        print(f"FAIL {name}: cannot connect: {e}", flush=True)
        return
    problems = []
    with s:
        if prelude_hello:
            s.send(hello(seq=1))
            try:
                r = s.recv(1 << 20)
            except socket.timeout:
                r = b""
            if len(r) < 24:
                problems.append(f"valid Hello got no reply ({len(r)} bytes)")
            else:
                magic, _, op, length, seq, err, _ = struct.unpack("<IHHIIiI", r[:24])
                if magic != MAGIC or op != OP_HELLO or seq != 1 or err != 0 or length != len(r):
                    problems.append(f"valid Hello got a bad {describe_reply(r)}")
        send_all(s, msgs)
        closed, replies = wait_closed(s)
        if not closed:
            problems.append(
                f"connection still open {CLOSE_TIMEOUT:.0f} s after the bad message"
                + (f" (got {', '.join(describe_reply(r) for r in replies)})" if replies else "")
            )
        for r in replies:
            if len(r) >= 24 and struct.unpack("<i", r[16:20])[0] == 0:
                problems.append(f"the bad message got a success {describe_reply(r)}")
    if log_re:
        deadline = time.monotonic() + LOG_TIMEOUT
        text = ""
        while time.monotonic() < deadline:
            text = new_log_since(offset)
            if re.search(log_re, text, re.IGNORECASE):
                break
            time.sleep(0.05)
        else:
            tail = " | ".join(text.strip().splitlines()[-3:]) or "(nothing new)"
            problems.append(f"no new log line matching /{log_re}/ within {LOG_TIMEOUT:.0f} s; new log: {tail}")
    if problems:
        failures.append(f"{name}: " + "; ".join(problems))
        print(f"FAIL {name}: " + "; ".join(problems), flush=True)
    else:
        print(f"ok   {name}", flush=True)


def not_magic_prefix():
    b = bytearray(rng.randbytes(100))
    if struct.unpack("<I", bytes(b[:4]))[0] == MAGIC:
        b[0] ^= 0xFF
    return bytes(b)


print(f"garbage sender pid {os.getpid()}", flush=True)

case("random bytes (100)", [not_magic_prefix()], r"bad magic")
case("truncated header (8 bytes)", [header()[:8]], r"shorter than a header")
case("one byte", [b"\x52"], r"shorter than a header")
case("wrong magic", [header(magic=0xDEADBEEF) + struct.pack("<II", 0, 0)], r"bad magic")
case("wrong version (99)", [header(version=99) + struct.pack("<II", 0, 0)],
     r"unsupported protocol version")
case("wrong version (0)", [header(version=0) + struct.pack("<II", 0, 0)],
     r"unsupported protocol version")
case("unknown op 0", [header(op=0, length=16)], r"unknown op")
case("unknown op 0xffff", [header(op=0xFFFF, length=16)], r"unknown op")
case("oversized datagram (64 KiB, header says 65536)",
     [header(length=65536) + bytes(65536 - 16)],
     r"too long|too large|too big|oversize|truncat|exceed|length does not match")
case("Hello: length field 24, datagram 40 bytes",
     [hello() + bytes(16)], r"length does not match")
case("Hello: length field 100, datagram 24 bytes",
     [header(length=100) + struct.pack("<II", 0, 0)], r"length does not match")
case("Hello: length field 16 (header only), datagram 16 bytes",
     [header(length=16)], r"length does not match")
case("AllocPd: length field 16, datagram 24 bytes",
     [header(op=OP_ALLOC_PD, length=ALLOC_PD_LEN) + bytes(8)], r"length does not match")
case("AllocPd: length field 24 (wrong for the op), datagram 24 bytes",
     [header(op=OP_ALLOC_PD, length=24) + bytes(8)], r"length does not match")
case("after a valid Hello: wrong magic", [header(magic=0x0BADF00D) + bytes(8)], r"bad magic",
     prelude_hello=True)
case("after a valid Hello: truncated header", [b"REMU"], r"shorter than a header",
     prelude_hello=True)
case("after a valid Hello: 200 random datagrams", [not_magic_prefix() for _ in range(200)],
     r"bad magic", prelude_hello=True)

# A well-formed request before any Hello: the daemon may answer with an error or close, but must
# not allocate anything for a session that never said Hello.
offset = log_size()
try:
    with connect() as s:
        s.send(header(op=OP_ALLOC_PD, length=ALLOC_PD_LEN, seq=7))
        closed, replies = wait_closed(s)
        bad = [describe_reply(r) for r in replies if len(r) < 24 or struct.unpack("<i", r[16:20])[0] == 0]
        if bad:
            failures.append(f"AllocPd before Hello: got {bad}")
            print(f"FAIL AllocPd before Hello: expected an error reply or a close, got {bad}", flush=True)
        else:
            print(f"ok   AllocPd before Hello: {'closed' if closed else 'error reply'}"
                  + (f" ({', '.join(describe_reply(r) for r in replies)})" if replies else ""), flush=True)
except OSError as e:
    failures.append(f"AllocPd before Hello: {e}")
    print(f"FAIL AllocPd before Hello: {e}", flush=True)

# Many connections opened and dropped at once, some mid-message.
conns = []
try:
    for i in range(64):
        s = connect()
        if i % 2:
            s.send(header()[: 1 + i % 15])
        conns.append(s)
finally:
    for s in conns:
        s.close()
print("ok   64 connections opened and dropped", flush=True)

# The daemon still answers a fresh, valid Hello.
try:
    with connect() as s:
        s.send(hello(seq=42))
        r = s.recv(1 << 20)
        magic, _, op, length, seq, err, _ = struct.unpack("<IHHIIiI", r[:24])
        if magic != MAGIC or op != OP_HELLO or seq != 42 or err != 0 or length != len(r):
            raise RuntimeError(describe_reply(r))
    print("ok   a valid Hello still gets a good reply", flush=True)
except Exception as e:  # noqa: BLE001
    failures.append(f"valid Hello after the garbage: {e!r}")
    print(f"FAIL valid Hello after the garbage: {e!r}", flush=True)

if failures:
    print(f"{len(failures)} case(s) failed", flush=True)
    sys.exit(1)
print("all garbage cases handled", flush=True)
