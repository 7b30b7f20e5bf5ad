#!/usr/bin/env bash
# timeline: `rdmaemu timeline` draws a real run from its verbs traces and captures. An
# ibv_rc_pingpong between two hosts shows each SEND as an arrow from the sender's lane to the
# receiver's with its PSN, the ACK coming back, the DMA into the MR the receiver registered (its
# lkey as the trace has it), the completions and the QP's moves to RTR and RTS; the SVG and the
# HTML page are well-formed. On a lossy wire the fault injector's drops are drawn (with the
# capture's comment) and the dropped PSN is sent again later. A file that is neither a trace nor a
# capture is refused.
#
# usage: timeline.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
command -v xmllint >/dev/null || fail "xmllint is missing (tools/install-deps.sh installs libxml2-utils)"

run_traced() { # DIR PORT ITERS
    export RDMAEMU_TRACE=$1/%p.trace
    emu_pair "pingpong$2" 1 2 60 -- ibv_rc_pingpong -g 0 -n "$3" -s 64 -p "$2"
    unset RDMAEMU_TRACE
    ((PAIR_SERVER_RC == 0 && PAIR_CLIENT_RC == 0)) ||
        fail "rc_pingpong: server $PAIR_SERVER_RC, client $PAIR_CLIENT_RC"
}

step "a clean ibv_rc_pingpong, traced and captured"
RUN=$EMU_WORK/run
emu_up 2 --pcap "$RUN"
run_traced "$RUN" 18720 3
"$RDMAEMU" down >/dev/null
"$RDMAEMU" timeline --text --html "$EMU_WORK/t.html" --svg "$EMU_WORK/t.svg" "$RUN" >"$EMU_WORK/t.txt" ||
    fail "rdmaemu timeline exited $?"
T=$EMU_WORK/t.txt
grep -v ' ibv_query\| ibv_get' "$T" | head -60
grep -Eq '^h1 = host 1 \(127\.0\.[0-9]+\.1\)$' "$T" || fail "no lane for host 1"
grep -Eq '^h2 = host 2 \(127\.0\.[0-9]+\.2\)$' "$T" || fail "no lane for host 2"
# The client (host 2) sends first: 3 SENDs each way, each ACKed back.
right=$(grep -Ec '^ +[0-9.]+   \*-+>\|   RC_SEND_ONLY psn 0x[0-9a-f]+ 64 B$' "$T" || true)
left=$(grep -Ec '^ +[0-9.]+   \|<-+\*   RC_SEND_ONLY psn 0x[0-9a-f]+ 64 B$' "$T" || true)
((right == 3 && left == 3)) || fail "expected 3 SEND arrows each way, got $right to h2 and $left to h1"
acks=$(grep -Ec '(\*-+>\||\|<-+\*)   ACK psn 0x' "$T" || true)
((acks == 6)) || fail "expected 6 ACK arrows, got $acks"
ok "3 SENDs each way between the lanes, each ACKed"
server_trace=$(grep -l '^# clock .* host=1$' "$RUN"/*.trace)
lkey=$(grep -o 'ibv_reg_mr(.*) = mr(len=64 lkey=0x[0-9a-f]*' "$server_trace" | grep -o '0x[0-9a-f]*$')
[[ -n $lkey ]] || fail "no ibv_reg_mr in the server's trace"
dma=$(grep -c "h1 DMA SEND payload into receive buffer of MR lkey $lkey " "$T" || true)
((dma == 3)) || fail "expected 3 DMAs into host 1's MR (lkey $lkey), got $dma"
ok "each SEND's DMA names the receiver's MR (lkey $lkey)"
grep -Eq 'h1 ibv_modify_qp qp 0x[0-9a-f]+ -> RTR = 0' "$T" || fail "no modify to RTR on host 1"
grep -Eq 'h2 ibv_modify_qp qp 0x[0-9a-f]+ -> RTS = 0' "$T" || fail "no modify to RTS on host 2"
[[ $(grep -c 'h1 CQE SUCCESS RECV' "$T") == 3 ]] || fail "expected 3 receive completions on host 1"
ok "the QPs' moves and the completions are on their hosts' lanes"
xmllint --noout "$EMU_WORK/t.svg" || fail "the SVG is not well-formed XML"
xmllint --noout --html "$EMU_WORK/t.html" 2>"$EMU_WORK/html.err" || fail "the HTML does not parse: $(cat "$EMU_WORK/html.err")"
[[ $(xmllint --xpath 'count(//*[local-name()="g"][@class="ev packet"])' "$EMU_WORK/t.svg") == 6 ]] ||
    fail "the SVG does not draw the 6 SENDs"
grep -q '<svg xmlns="http://www.w3.org/2000/svg"' "$EMU_WORK/t.html" || fail "the HTML page has no inline SVG"
ok "SVG and HTML are well-formed, with the packets drawn"

step "a lossy wire: drops drawn, the lost PSN sent again"
LOSSY=$EMU_WORK/lossy
emu_up 2 --pcap "$LOSSY" --drop 0.15 --seed 7
run_traced "$LOSSY" 18721 30
"$RDMAEMU" down >/dev/null
"$RDMAEMU" timeline "$LOSSY" >"$EMU_WORK/lossy.txt" || fail "rdmaemu timeline exited $?"
L=$EMU_WORK/lossy.txt
grep -m3 DROPPED "$L" || fail "no dropped packet drawn on a 15% lossy wire"
grep -q -- '-X .*DROPPED  (rdmaemu: dropped by the fault injector (--drop): never sent)' "$L" ||
    fail "a drop is not drawn with its capture comment"
psn=$(grep -m1 -o 'RC_SEND_ONLY psn 0x[0-9a-f]* 64 B  DROPPED' "$L" | awk '{print $3}')
if [[ -n $psn ]]; then
    grep -Eq "(\*-+>\||\|<-+\*)   RC_SEND_ONLY psn $psn 64 B\$" "$L" || fail "the dropped SEND psn $psn is never sent again"
    ok "SEND psn $psn dropped, then retransmitted"
else
    grep -Eq '(\*-+>\||\|<-+\*)   (ACK|RC_SEND_ONLY) psn' "$L" || fail "nothing got through the lossy wire"
    ok "drops drawn (none of them a SEND: an ACK, recovered by the requester's retry)"
fi

step "files that are neither traces nor captures are refused"
rc=0
"$RDMAEMU" timeline /etc/passwd >"$EMU_WORK/bad.out" 2>&1 || rc=$?
((rc == 4)) || fail "timeline /etc/passwd exited $rc, not 4"
grep -q 'is neither a verbs trace (RDMAEMU_TRACE) nor a pcapng capture' "$EMU_WORK/bad.out" ||
    fail "no reason given: $(cat "$EMU_WORK/bad.out")"
ok "refused: $(cat "$EMU_WORK/bad.out")"
echo "PASS"
