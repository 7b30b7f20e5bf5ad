#!/usr/bin/env bash
# capture_live: a capture you can watch. Hosts started with `--drop 0.03 --duplicate 0.01 --pcap
# DIR`, then:
# 1. ib_write_bw -n 100 -s 4096 -m 1024 (four packets a message, an Ethernet's path MTU) over
#    the lossy wire. When the documented live capture
#    `tshark -i lo -f 'udp port 4791 and host ...'` may run here (root, or dumpcap's
#    capabilities), it sees the run's packets, each decoded as InfiniBand (with faults on, the
#    hosts send packet by packet, no GSO batches).
# 2. The run over, the daemons still up: each capture already holds every packet (nothing waits
#    in a buffer): as many "dropped by the fault injector" and "a duplicate made by the fault
#    injector" comments in each host's file as `rdmaemu status` counts drops and duplicates for
#    it, no other comment; every packet is UDP 4791 decoded as InfiniBand, nothing malformed;
#    icrc_check.py finds every ICRC right (a dropped packet is captured as it would have gone)
#    and every block whole; and every RC request dropped at its first sending is sent again later
#    in the same file (same QP, same PSN): the loss behind each retransmission is there to see.
# 3. During an ib_write_lat: tshark -r host2.pcap decodes its packets, the newest packet in the
#    file is less than a second old and the file grows; then host 2's daemon is killed with
#    SIGKILL. Its file still reads in tshark without complaint, every block whole, and it holds
#    every packet host 1 received from host 2 but those of host 2's last turns (at most 4
#    missing, all among the last 8 received).
#
# usage: capture_live.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ICRC_CHECK=$(dirname "${BASH_SOURCE[0]}")/icrc_check.py
emu_setup "$1"
command -v ib_write_bw >/dev/null || fail "perftest not installed"
command -v tshark >/dev/null || fail "tshark not installed (Debian package tshark)"

PCAP_DIR=$EMU_WORK/captures
emu_up 2 --drop 0.03 --duplicate 0.01 --seed 11 --pcap "$PCAP_DIR"
H1=$(emu_host 1 address)
H2=$(emu_host 2 address)
DROPPED='rdmaemu: dropped by the fault injector (--drop): never sent'
DUPLICATE='rdmaemu: a duplicate made by the fault injector (--duplicate)'

# tshark -r FILE [ARGS...] with the payload heuristics off (as in capture.sh); fails on a
# non-zero exit or anything on stderr but tshark's note about running as root.
NO_PAYLOAD_PROTOCOLS=()
for p in rpcordma infiniband.eoib infiniband_sdp fcoib smc smb_direct nvme-rdma lnet iser; do
    NO_PAYLOAD_PROTOCOLS+=(--disable-protocol "$p")
done
NO_PAYLOAD_PROTOCOLS+=(--disable-heuristic eth_over_ib)
tsh() {
    local file=$1 rc=0
    shift
    tshark -r "$file" "${NO_PAYLOAD_PROTOCOLS[@]}" "$@" 2>"$EMU_WORK/tshark.err" || rc=$?
    ((rc == 0)) || fail "tshark -r $file $* exited $rc: $(cat "$EMU_WORK/tshark.err")"
    if grep -v 'Running as user "root"' "$EMU_WORK/tshark.err" | grep -q .; then
        fail "tshark -r $file $*: $(cat "$EMU_WORK/tshark.err")"
    fi
}
count() { tsh "$1" -Y "$2" -T fields -e frame.number | wc -l; }
# The same for a file a daemon is writing now: tshark may meet its last block half written
# ("cut short in the middle of a packet"); the packets before it count.
count_live() {
    local rc=0
    tshark -r "$1" "${NO_PAYLOAD_PROTOCOLS[@]}" -Y "$2" -T fields -e frame.number \
        >"$EMU_WORK/live.fields" 2>"$EMU_WORK/tshark.err" || rc=$?
    if grep -v 'Running as user "root"' "$EMU_WORK/tshark.err" | grep -vq 'cut short in the middle'; then
        fail "tshark -r $1 (while it is written) exited $rc: $(cat "$EMU_WORK/tshark.err")"
    fi
    wc -l <"$EMU_WORK/live.fields"
}
# "PACKETS AGE_MS" of a capture being written: its whole Enhanced Packet Blocks and how old the
# newest one is (its timestamp against the clock now).
newest() {
    python3 - "$1" <<'EOF'
import struct, sys, time
d = open(sys.argv[1], "rb").read()
now = time.time_ns()
at = n = last = 0
while at + 12 <= len(d):
    btype, blen = struct.unpack_from("<II", d, at)
    if blen < 12 or at + blen > len(d):
        break
    if btype == 6:
        n += 1
        hi, lo = struct.unpack_from("<II", d, at + 12)
        last = hi << 32 | lo
    at += blen
print(n, (now - last) // 1000000 if n else -1)
EOF
}

# ---- 1: traffic over the lossy wire, watched live on lo ---------------------------------------
LIVE=()
step "tshark -i lo -f 'udp port 4791 and host $H1' (the live capture docs/data-path-and-wire.md shows)"
# tshark itself in the background (not under timeout), so the EXIT trap can kill it.
tshark -i lo -f "udp port 4791 and host $H1" -a duration:120 -w "$EMU_WORK/lo.pcapng" \
    >"$EMU_WORK/lo.out" 2>&1 &
live_pid=$!
emu_bg_register "$live_pid"
for _ in $(seq 50); do
    grep -q 'Capturing on' "$EMU_WORK/lo.out" && break
    kill -0 "$live_pid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$live_pid" 2>/dev/null; then
    LIVE=(yes)
    sleep 0.5 # "Capturing on" comes just before the capture opens
    ok "tshark -i lo is capturing"
else
    live_rc=0
    wait "$live_pid" || live_rc=$?
    echo "note: tshark -i lo cannot capture here (exit $live_rc: $(tail -n 2 "$EMU_WORK/lo.out")); that check is skipped"
fi

step "ib_write_bw -n 100 -s 4096 -m 1024 over --drop 0.03 --duplicate 0.01"
emu_perftest 1 60 ib_write_bw -n 100 -s 4096 -m 1024

if ((${#LIVE[@]})); then
    sleep 0.5
    kill -INT "$live_pid" 2>/dev/null || true
    wait "$live_pid" || true
    lo=$(count "$EMU_WORK/lo.pcapng" "udp.port == 4791")
    lo_ib=$(count "$EMU_WORK/lo.pcapng" "udp.port == 4791 && infiniband.bth.opcode")
    ((lo > 0)) || fail "tshark -i lo saw no UDP 4791 packet of host 1 during ib_write_bw"
    ((lo_ib == lo)) || fail "tshark -i lo: $((lo - lo_ib)) of $lo packets do not decode as InfiniBand"
    ok "tshark -i lo saw $lo RoCE v2 packets of host 1, each decoded as InfiniBand"
fi

# ---- 2: the daemons still up, the captures hold every packet, faults with their comments ----
step "the daemons still up: each capture holds every packet, the faults with their comments"
for h in 1 2; do
    f=$PCAP_DIR/host$h.pcap
    # The counters and the file are read a moment apart: a packet in between (none should come
    # now) gets another try.
    for _ in 1 2 3; do
        emu_status >/dev/null
        drops=$(emu_json "host($h)['counters']['fault_drops']")
        dups=$(emu_json "host($h)['counters']['fault_duplicates']")
        got_drops=$(count "$f" "frame.comment == \"$DROPPED\"")
        got_dups=$(count "$f" "frame.comment == \"$DUPLICATE\"")
        ((got_drops == drops && got_dups == dups)) && break
        sleep 0.5
    done
    ((drops > 0)) || fail "host $h dropped nothing at --drop 0.03 (fault_drops 0)"
    ((got_drops == drops)) ||
        fail "host$h.pcap has $got_drops packets commented '$DROPPED', status counts $drops drops"
    ((got_dups == dups)) ||
        fail "host$h.pcap has $got_dups packets commented '$DUPLICATE', status counts $dups duplicates"
    other="frame.comment && frame.comment != \"$DROPPED\" && frame.comment != \"$DUPLICATE\""
    n=$(count "$f" "$other")
    ((n == 0)) || {
        tsh "$f" -Y "$other" -T fields -e frame.number -e frame.comment | head -n 5
        fail "host$h.pcap: $n packets with another comment (nothing is corrupted or reordered here)"
    }
    ok "host$h.pcap: $got_drops drops and $got_dups duplicates with their comments, as status counts them"

    not_roce='!(udp.dstport == 4791 && infiniband.bth.opcode) || _ws.malformed || _ws.expert.severity >= error'
    n=$(count "$f" "$not_roce")
    ((n == 0)) || {
        tsh "$f" -Y "$not_roce" -c 3 -V | head -n 60
        fail "host$h.pcap: $n packets are not UDP 4791 decoded as InfiniBand, or malformed"
    }
    ok "host$h.pcap: every packet is UDP 4791 decoded as InfiniBand, nothing malformed"

    # An RC request packet (not an ACK, opcode 17) dropped at its first sending (so the responder
    # never had it) is sent again later: the retransmission the loss caused.
    tsh "$f" -Y 'infiniband.bth.opcode < 32' -T fields -E separator=/t -e frame.number \
        -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn -e frame.comment \
        >"$EMU_WORK/host$h.fields"
    python3 - "$EMU_WORK/host$h.fields" "$DROPPED" "host$h.pcap" $((h == 2)) <<'EOF' ||
import sys
path, dropped, name, must = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
sent = set()  # (QP, PSN) that went out
lost = 0
for i, row in enumerate(rows):
    num, op, qp, psn = row[:4]
    if row[4:5] != [dropped]:
        sent.add((qp, psn))
        continue
    if int(op) == 17 or (qp, psn) in sent:
        continue  # an ACK, or a copy of a packet the responder may already have
    again = next((r[0] for r in rows[i + 1:] if r[2:4] == [qp, psn] and r[4:5] != [dropped]), None)
    if again is None:
        sys.exit(f"{name}: frame {num} (opcode {op}, QP {qp}, PSN {psn}) dropped, never sent again")
    lost += 1
    if lost == 1:
        print(f"{name}: frame {num} (opcode {op}, QP {qp}, PSN {psn}) dropped; sent again in frame {again}")
print(f"{name}: {lost} requests lost at their first sending, each sent again later")
if must and lost == 0:
    sys.exit(f"{name}: no request was lost at its first sending")
EOF
        fail "host$h.pcap: a lost request is not followed by its retransmission"
done
python3 "$ICRC_CHECK" "$PCAP_DIR/host1.pcap" "$PCAP_DIR/host2.pcap" ||
    fail "icrc_check.py found a wrong ICRC (or a block cut short) in the running hosts' captures"
ok "ICRC right on every packet of both captures, read while the hosts run"
echo "the first dropped packet of host2.pcap and what followed it:"
first=$(tsh "$PCAP_DIR/host2.pcap" -Y "frame.comment == \"$DROPPED\"" -T fields -e frame.number |
    head -n 1)
tsh "$PCAP_DIR/host2.pcap" -Y "frame.number >= $first && frame.number < $first + 4" \
    -T fields -e frame.number -e ip.src -e ip.dst -e infiniband.bth.opcode -e infiniband.bth.psn \
    -e frame.comment

# ---- 3: read during ib_write_lat, then kill -9 of host 2's daemon --------------------------
step "ib_write_lat: tshark -r reads host2.pcap as it grows"
port=$(free_tcp_port)
LAT=(ib_write_lat -p "$port" -n 1000000 -s 64)
"$RDMAEMU" run --host 1 -- "${LAT[@]}" >"$EMU_WORK/lat.server" 2>&1 &
server=$!
emu_bg_register "$server"
wait_tcp_listen "$port" 20 "$server" || fail "ib_write_lat server did not listen on $port"
"$RDMAEMU" run --host 2 -- "${LAT[@]}" 127.0.0.1 >"$EMU_WORK/lat.client" 2>&1 &
client=$!
emu_bg_register "$client"
read -r start _ < <(newest "$PCAP_DIR/host2.pcap")
for _ in $(seq 100); do
    read -r n _ < <(newest "$PCAP_DIR/host2.pcap")
    ((n > start + 100)) && break
    kill -0 "$client" 2>/dev/null || fail "ib_write_lat client exited: $(tail -n 5 "$EMU_WORK/lat.client")"
    sleep 0.1
done
# ib_write_lat at 64 bytes sends RDMA WRITE Only (opcode 10); ib_write_bw at 4096 did not.
writes=$(count_live "$PCAP_DIR/host2.pcap" 'infiniband.bth.opcode == 10')
read -r n1 age1 < <(newest "$PCAP_DIR/host2.pcap")
sleep 0.5
read -r n2 age2 < <(newest "$PCAP_DIR/host2.pcap")
kill -0 "$client" 2>/dev/null || fail "ib_write_lat client exited: $(tail -n 5 "$EMU_WORK/lat.client")"
((writes > 0)) || fail "tshark -r host2.pcap decodes no RDMA WRITE Only of ib_write_lat while it runs"
((n2 > n1)) || fail "host2.pcap did not grow in 0.5 s of ib_write_lat ($n1 packets, then $n2)"
((age1 < 1000 && age2 < 1000)) ||
    fail "the newest packet in host2.pcap was ${age1} ms, then ${age2} ms old during ib_write_lat"
ok "during ib_write_lat: tshark -r decodes $writes of its WRITEs; $n1 packets, the newest ${age1} ms old; 0.5 s later $n2, ${age2} ms"

step "kill -9 of host 2's daemon during ib_write_lat"
daemon=$(emu_host 2 daemon_pid)
kill -KILL "$daemon"
for _ in $(seq 50); do
    kill -0 "$daemon" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$daemon" 2>/dev/null && fail "host 2's daemon $daemon still alive after SIGKILL"
kill -KILL "$client" "$server" 2>/dev/null || true
wait "$client" "$server" 2>/dev/null || true
sleep 0.5 # host 1's last turn reaches its file
ok "host 2's daemon (pid $daemon) killed with SIGKILL"

f=$PCAP_DIR/host2.pcap
n=$(count "$f" 'udp.dstport == 4791 && infiniband.bth.opcode')
python3 "$ICRC_CHECK" "$f" || fail "icrc_check.py: host2.pcap after kill -9 is cut short or wrong"
ok "host2.pcap after kill -9: tshark reads its $n packets without complaint, every block whole"

# What host 1 received from host 2 (host 1's capture, host 1 alive) must be in host 2's file,
# but for what host 2 sent in its last turns.
tsh "$PCAP_DIR/host1.pcap" -Y "ip.src == $H2 && udp.dstport == 4791" -T fields -E separator=/t \
    -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn >"$EMU_WORK/h1_rx"
tsh "$f" -Y "ip.src == $H2 && udp.dstport == 4791" -T fields -E separator=/t \
    -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn >"$EMU_WORK/h2_tx"
python3 - "$EMU_WORK/h1_rx" "$EMU_WORK/h2_tx" <<'EOF' ||
import sys
received = [l.rstrip("\n") for l in open(sys.argv[1]) if l.strip()]
sent = set(l.rstrip("\n") for l in open(sys.argv[2]) if l.strip())
missing = [i for i, r in enumerate(received) if r not in sent]
print(f"host 1 received {len(received)} packets from host 2; host2.pcap lacks {len(missing)} of them")
if len(missing) > 4:
    sys.exit(f"host2.pcap lacks {len(missing)} packets host 1 received: {[received[i] for i in missing[:5]]}")
if missing and missing[0] < len(received) - 8:
    sys.exit(f"host2.pcap lacks packet {missing[0] + 1} of the {len(received)} host 1 received")
EOF
    fail "host2.pcap misses packets host 1 received from it"
ok "host2.pcap holds every packet host 1 received from it, up to host 2's last turns"
