#!/usr/bin/env bash
# rdmacm_capture: the InfiniBand CM on the emulated wire, as tshark decodes it. Hosts started with
# --pcap; rping (connection set-up and tear-down), a connect to a port nobody listens on and
# udaddy (service ID resolution) between them; then in host1.pcap: every packet to QP 1 is a CM
# MAD tshark decodes (management class 0x07, nothing malformed, no expert error), rping's
# exchange is REQ, REP, RTU ... DREQ, DREP in that order, the REQ names TCP port 7174 in its
# service ID and both addresses in its IP CM private data, REP and RTU answer the REQ's
# transaction, the refused connect is a REJ with reason 8, SIDR_REQ and SIDR_REP are there; and
# icrc_check.py finds every RoCE packet's ICRC right.
# usage: rdmacm_capture.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ICRC_CHECK=$(dirname "${BASH_SOURCE[0]}")/icrc_check.py
emu_setup "$1"
command -v tshark >/dev/null || fail "tshark not installed (Debian package tshark)"
PCAP_DIR=$EMU_WORK/captures
emu_up 2 --pcap "$PCAP_DIR"
A1=$(emu_host 1 address)
A2=$(emu_host 2 address)

step "traffic: rping, a refused connect, udaddy"
emu_cm_pair rping 7174 60 rping -s -a "$A1" -C 10 -S 100 -V -- rping -c -a "$A1" -C 10 -S 100 -V
((PAIR_SERVER_RC == 0 && PAIR_CLIENT_RC == 0)) ||
    { emu_cm_pair_dump rping; fail "rping: server $PAIR_SERVER_RC, client $PAIR_CLIENT_RC"; }
rc=0
timeout 20 "$RDMAEMU" run --host 2 -- rping -c -a "$A1" -p 9999 -C 1 >"$EMU_WORK/refused" 2>&1 || rc=$?
grep -q "RDMA_CM_EVENT_REJECTED, error 8" "$EMU_WORK/refused" || fail "no REJECTED: $(cat "$EMU_WORK/refused")"
emu_cm_pair udaddy 7174 60 udaddy -- udaddy -s "$A1"
((PAIR_SERVER_RC == 0 && PAIR_CLIENT_RC == 0)) ||
    { emu_cm_pair_dump udaddy; fail "udaddy: server $PAIR_SERVER_RC, client $PAIR_CLIENT_RC"; }
timeout 30 "$RDMAEMU" down || fail "rdmaemu down exited $?"

PCAP=$PCAP_DIR/host1.pcap
tsh() {
    local rc=0
    tshark -r "$PCAP" --disable-protocol rpcordma "$@" 2>"$EMU_WORK/tshark.err" || rc=$?
    ((rc == 0)) || fail "tshark -r $PCAP $* exited $rc: $(cat "$EMU_WORK/tshark.err")"
}
count() { tsh -Y "$1" -T fields -e frame.number | wc -l; }

step "tshark decodes the CM exchange in host1.pcap"
tsh -Y 'infiniband.bth.destqp == 1' | tee "$EMU_WORK/cm.txt"
gsi=$(count 'infiniband.bth.destqp == 1')
cm=$(count 'infiniband.bth.destqp == 1 && infiniband.mad.mgmtclass == 0x07 && infiniband.bth.opcode == 100 && infiniband.deth.q_key == 0x80010000 && infiniband.deth.srcqp == 1')
((gsi >= 9)) || fail "only $gsi packets to QP 1 in $PCAP"
((cm == gsi)) || fail "$((gsi - cm)) of $gsi packets to QP 1 are no UD CM MAD with the GSI Q_Key"
for filter in '_ws.malformed' '_ws.expert.severity >= error'; do
    n=$(count "$filter")
    ((n == 0)) || { tsh -Y "$filter" -c 3 -V | head -n 60; fail "tshark -Y '$filter' matches $n packets"; }
done
ok "$gsi CM MADs to QP 1, all decoded, nothing malformed"

# The attribute of each CM MAD, in order: rping's connection comes first.
tsh -Y 'infiniband.bth.destqp == 1' -T fields -e infiniband.mad.attributeid >"$EMU_WORK/attrs"
order=$(head -n 3 "$EMU_WORK/attrs" | tr '\n' ' ')
[[ $order == "0x0010 0x0013 0x0014 " ]] || fail "rping's connection began with '$order', not REQ REP RTU"
grep -n . "$EMU_WORK/attrs" | grep -m1 0x0015 >/dev/null || fail "no DREQ"
dreq=$(grep -n -m1 0x0015 "$EMU_WORK/attrs" | cut -d: -f1)
[[ $(sed -n "$((dreq + 1))p" "$EMU_WORK/attrs") == 0x0016 ]] || fail "the DREQ was not answered by a DREP"
for attr in 0x0012 0x0017 0x0018; do
    grep -qx "$attr" "$EMU_WORK/attrs" || fail "no CM attribute $attr in $PCAP"
done
ok "rping: REQ, REP, RTU ... DREQ, DREP; a REJ; SIDR_REQ, SIDR_REP"

fields=$(tsh -Y 'infiniband.cm.req.serviceid' -c 1 -T fields -e ip.src -e ip.dst -e infiniband.cm.req.serviceid.protocol \
    -e infiniband.cm.req.serviceid.dport -e infiniband.cm.req.ip_cm.sip4 -e infiniband.cm.req.ip_cm.dip4 \
    -e infiniband.cm.req.prim_localgid_ipv4 -e infiniband.cm.req.prim_remotegid_ipv4)
echo "REQ: $fields"
[[ $fields == "$A2"$'\t'"$A1"$'\t'0x06$'\t'0x1c06$'\t'"$A2"$'\t'"$A1"$'\t'"$A2"$'\t'"$A1" ]] ||
    fail "the REQ's addresses and service ID are not host 2 -> host 1, TCP port 7174: $fields"
tids=$(tsh -Y 'infiniband.bth.destqp == 1' -c 3 -T fields -e infiniband.mad.transactionid | sort -u | wc -l)
((tids == 1)) || fail "REQ, REP and RTU carry $tids transaction IDs, not one"
reason=$(tsh -Y 'infiniband.cm.rej.reason' -T fields -e infiniband.cm.rej.reason | head -n 1)
[[ $reason == 0x0008 ]] || fail "the refused connect's REJ has reason $reason, not 8 (invalid service ID)"
ok "the REQ: TCP port 7174, IP CM header $A2 -> $A1; REP and RTU in its transaction; REJ reason 8"

step "ICRC of every captured RoCE packet (icrc_check.py)"
python3 "$ICRC_CHECK" "$PCAP_DIR/host1.pcap" "$PCAP_DIR/host2.pcap" || fail "icrc_check.py found bad ICRCs"
ok "ICRC correct on every packet, the CM's included"
