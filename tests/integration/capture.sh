#!/usr/bin/env bash
# capture: `rdmaemu up --hosts 2 --pcap DIR` makes DIR and gives host i DIR/host<i>.pcap; after
# ib_write_bw -n 20, ib_send_lat -n 20 and a UD multicast ib_send_bw -g -n 20 (to ::ffff:224.0.0.7)
# between the hosts and `rdmaemu down`, tshark decodes
# every UDP 4791 packet of host1.pcap as InfiniBand (each has infiniband.bth.opcode; nothing is
# malformed; no InfiniBand packet lacks a BTH opcode), RC RDMA WRITE, SEND and ACKNOWLEDGE opcodes
# are there, multicast packets show as a NIC sends them (IP destination 224.0.0.7, MAC
# 01:00:5e:00:00:07, DestQP 0xFFFFFF, no trailer), and icrc_check.py (an independent ICRC
# implementation over zlib.crc32) finds the
# ICRC of every RoCE packet in both captures correct. Then the checker's other side: hosts
# started with --corrupt 0.02 --pcap; the corrupted packets must be counted by the receivers as
# ICRC errors (status --json), and icrc_check.py must find exactly that many wrong ICRCs in each
# capture (a host's capture shows the packets it sent as they went out, corrupted or not). A flip
# in BTH byte 4 (FECN/BECN/reserved) goes unseen, since the ICRC masks that byte: so ICRC errors
# may be fewer than corruptions, but both sides must agree on which packets are bad.
#
# usage: capture.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ICRC_CHECK=$(dirname "${BASH_SOURCE[0]}")/icrc_check.py
emu_setup "$1"
command -v ib_write_bw >/dev/null || fail "perftest not installed"
command -v tshark >/dev/null || fail "tshark not installed (Debian package tshark)"

PCAP_DIR=$EMU_WORK/captures/nested # up must create it, parents included
emu_up 2 --pcap "$PCAP_DIR"
[[ -d $PCAP_DIR ]] || fail "rdmaemu up --pcap $PCAP_DIR did not create the directory"
grep -qF "capture: $PCAP_DIR/host<i>.pcap" "$EMU_WORK/up.out" ||
    fail "rdmaemu up --pcap did not print 'capture: $PCAP_DIR/host<i>.pcap'"
for h in 1 2; do
    pid=$(emu_host "$h" daemon_pid)
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "--pcap $PCAP_DIR/host$h.pcap" ||
        fail "host $h's nicsimd was not given --pcap $PCAP_DIR/host$h.pcap: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
done
ok "--pcap: directory made, host<i> writes host<i>.pcap"

step "traffic"
emu_perftest 1 60 ib_write_bw -n 20
emu_perftest 1 60 ib_send_lat -n 20
emu_perftest 1 60 ib_send_bw -c UD -g -M 0:0:0:0:0:0:0:0:0:0:255:255:224:0:0:7 -n 20

# perftest's UD messages are as long as the port's path MTU (4096 on loopback).
mtu=$(emu_host 1 mtu)

step "rdmaemu down (the daemons flush their captures)"
timeout 30 "$RDMAEMU" down || fail "rdmaemu down exited $?"
for h in 1 2; do
    [[ -s $PCAP_DIR/host$h.pcap ]] || fail "no capture at $PCAP_DIR/host$h.pcap"
    ok "host$h.pcap: $(stat -c %s "$PCAP_DIR/host$h.pcap") bytes"
done

PCAP=$PCAP_DIR/host1.pcap
# tshark -r host1.pcap --disable-protocol rpcordma [ARGS...] (SEND payloads can look like
# RPC-over-RDMA otherwise). The other protocols InfiniBand payloads are tried as (heuristics) are
# off too: perftest's UD payloads are random bytes, which may pass for EoIB, SDP, FCoIB, an
# Ethernet frame... and then look malformed.
NO_PAYLOAD_PROTOCOLS=()
for p in rpcordma infiniband.eoib infiniband_sdp fcoib smc smb_direct nvme-rdma lnet iser; do
    NO_PAYLOAD_PROTOCOLS+=(--disable-protocol "$p")
done
# Ethernet over IB: a UD payload whose first bytes look like an ethertype is decoded as a frame.
NO_PAYLOAD_PROTOCOLS+=(--disable-heuristic eth_over_ib)
tsh() {
    local rc=0
    tshark -r "$PCAP" "${NO_PAYLOAD_PROTOCOLS[@]}" "$@" 2>"$EMU_WORK/tshark.err" || rc=$?
    ((rc == 0)) || fail "tshark -r $PCAP $* exited $rc: $(cat "$EMU_WORK/tshark.err")"
}
count() { tsh -Y "$1" -T fields -e frame.number | wc -l; }

step "tshark decodes host1.pcap"
roce=$(count 'udp.dstport == 4791')
decoded=$(count 'udp.dstport == 4791 && infiniband.bth.opcode')
echo "UDP 4791 packets: $roce, with infiniband.bth.opcode: $decoded"
((roce > 0)) || fail "tshark finds no UDP 4791 packet in $PCAP"
((decoded == roce)) || {
    tsh -Y 'udp.dstport == 4791 && !infiniband.bth.opcode' -c 5 -V | head -n 80
    fail "$((roce - decoded)) of $roce UDP 4791 packets have no infiniband.bth.opcode"
}
ok "every UDP 4791 packet decodes as InfiniBand with a BTH opcode"
others=$(count '!(udp.dstport == 4791)')
((others == 0)) || fail "$others packets in $PCAP are not UDP 4791"
for filter in '_ws.malformed' 'infiniband && !(infiniband.bth.opcode)' '_ws.expert.severity >= error'; do
    n=$(count "$filter")
    ((n == 0)) || {
        tsh -Y "$filter" -c 3 -V | head -n 80
        fail "tshark -Y '$filter' matches $n packets"
    }
    ok "tshark -Y '$filter' matches nothing"
done

# tshark's names of the opcodes it decoded, with counts ("Reliable Connection (RC) - RDMA WRITE
# First (6)"); IBA 9.2: 0x04 SEND Only, 0x06/0x07/0x08/0x0a RDMA WRITE First/Middle/Last/Only,
# 0x11 Acknowledge.
tsh -O infiniband >"$EMU_WORK/decoded.txt"
grep -E '^[[:space:]]+Opcode: ' "$EMU_WORK/decoded.txt" | sed 's/^[[:space:]]*Opcode: //' |
    sort | uniq -c >"$EMU_WORK/opcodes.txt" || true
echo "opcodes tshark decoded in host1.pcap:"
cat "$EMU_WORK/opcodes.txt"
for want in 'Reliable Connection \(RC\) - RDMA WRITE (First|Only) \((6|10)\)' \
    'Reliable Connection \(RC\) - RDMA WRITE (Last|Only) \((8|10)\)' \
    'Reliable Connection \(RC\) - Acknowledge \(17\)' \
    'Reliable Connection \(RC\) - SEND Only \(4\)'; do
    grep -qE "$want" "$EMU_WORK/opcodes.txt" || fail "no opcode matching /$want/ in $PCAP"
done
ok "RC RDMA WRITE, SEND Only and Acknowledge opcodes present"
echo "a few decoded packets:"
tsh -c 5

step "multicast packets as a NIC sends them"
mc=$(count 'ip.dst == 224.0.0.7')
mc_ok=$(count "ip.dst == 224.0.0.7 && eth.dst == 01:00:5e:00:00:07 && infiniband.bth.destqp == 0xffffff && infiniband.bth.opcode == 100 && udp.length == 8 + 12 + 8 + $mtu + 4")
((mc >= 20)) || fail "host1.pcap has $mc packets to 224.0.0.7, expected the 20 of ib_send_bw -g"
((mc_ok == mc)) || fail "$((mc - mc_ok)) of $mc multicast packets in host1.pcap are not UD SEND Only to 0xFFFFFF at MAC 01:00:5e:00:00:07 with $mtu bytes and no trailer"
ok "$mc multicast packets in host1.pcap: to 224.0.0.7 (01:00:5e:00:00:07), DestQP 0xFFFFFF, no trailer"

step "ICRC of every captured RoCE packet, recomputed independently (icrc_check.py)"
python3 "$ICRC_CHECK" "$PCAP_DIR/host1.pcap" "$PCAP_DIR/host2.pcap" ||
    fail "icrc_check.py found packets whose ICRC does not match (or no packet)"
ok "ICRC correct on every RoCE v2 packet of host1.pcap and host2.pcap"

step "--corrupt: the receivers and icrc_check.py see the same bad packets"
PCAP_DIR2=$EMU_WORK/captures-corrupt
emu_up 2 --corrupt 0.02 --seed 7 --pcap "$PCAP_DIR2"
emu_perftest 1 60 ib_write_bw -n 20
emu_status >/dev/null
for h in 1 2; do echo "host $h counters: $(emu_json "host($h)['counters']")"; done
corrupted=$(emu_json "host(1)['counters']['fault_corruptions'] + host(2)['counters']['fault_corruptions']")
icrc_errors=$(emu_json "host(1)['counters']['icrc_errors'] + host(2)['counters']['icrc_errors']")
((corrupted > 0)) || fail "--corrupt 0.02: no packet was corrupted (fault_corruptions 0 on both hosts)"
((icrc_errors > 0 && icrc_errors <= corrupted && icrc_errors * 10 >= corrupted * 9)) ||
    fail "--corrupt: $corrupted packets corrupted but the receivers counted $icrc_errors ICRC errors"
((icrc_errors == corrupted)) ||
    echo "note: $((corrupted - icrc_errors)) corruptions hit bits the ICRC does not cover"
timeout 30 "$RDMAEMU" down || fail "rdmaemu down exited $?"
rc=0
python3 "$ICRC_CHECK" --expect-wrong "$icrc_errors" "$PCAP_DIR2/host1.pcap" "$PCAP_DIR2/host2.pcap" \
    >"$EMU_WORK/icrc_corrupt.out" 2>&1 || rc=$?
grep -v ': packet ' "$EMU_WORK/icrc_corrupt.out" || true
((rc == 0)) || fail "icrc_check.py did not find exactly the $icrc_errors packets the receivers rejected"
ok "$corrupted corrupted packets: $icrc_errors ICRC errors at the receivers, as many wrong ICRCs in each capture"
