#!/usr/bin/env bash
# ui_page: `rdmaemu ui` serves a page on 127.0.0.1 only, and headless Chromium shows on it what the
# hosts hold while a real program runs: an ibv_rc_pingpong server's QP in INIT with the MR keys its
# verbs trace has; once the client runs, both QPs in RTS with their peer, and the host's counters
# growing from one look to the next (the page polls /status.json); and the timeline of a traced
# and captured run (its SENDs, the DMA into the receiver's MR). A screenshot of the page during
# the run is kept in OUTDIR/ui.png. Chromium (no other test needs it) is installed by ctest's
# browser_deps step first; run by hand, the script installs it when missing (install-deps.sh browser).
#
# usage: ui_page.sh RDMAEMU OUTDIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$2
mkdir -p "$OUT"
emu_setup "$1"
if ! command -v chromium >/dev/null; then
    "$here/../../tools/install-deps.sh" browser || fail "chromium is missing and could not be installed (tools/install-deps.sh browser)"
fi

page() { # page DOM_FILE [chromium options]: the page as headless Chromium leaves it after 2.5 s
    local dom=$1
    shift
    timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --user-data-dir="$EMU_WORK/chromium" --virtual-time-budget=2500 "$@" \
        --dump-dom "$URL" >"$dom" 2>>"$EMU_WORK/chromium.err" ||
        fail "chromium --dump-dom failed: $(tail -5 "$EMU_WORK/chromium.err")"
}
dom() { python3 "$here/ui_dom.py" "$@"; }

RUN=$EMU_WORK/run
emu_up 2 --pcap "$RUN"

step "rdmaemu ui listens on 127.0.0.1 only"
"$RDMAEMU" ui --port 0 "$RUN" >"$EMU_WORK/ui.out" 2>&1 &
emu_bg_register $!
for _ in $(seq 50); do grep -q '^rdmaemu ui: http://' "$EMU_WORK/ui.out" && break; sleep 0.1; done
URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*/' "$EMU_WORK/ui.out") || fail "no URL from rdmaemu ui: $(cat "$EMU_WORK/ui.out")"
port=${URL##*:}
port=${port%/}
listening=$(ss -Hltn "sport = :$port" | awk '{print $4}')
[[ $listening == "127.0.0.1:$port" ]] || fail "rdmaemu ui listens on '$listening', not 127.0.0.1:$port only"
ok "serving $URL"

step "a traced, captured ibv_rc_pingpong: its timeline on the page"
export RDMAEMU_TRACE=$RUN/%p.trace
emu_pair short 1 2 60 -- ibv_rc_pingpong -g 0 -n 3 -s 64 -p 18730
unset RDMAEMU_TRACE
((PAIR_SERVER_RC == 0 && PAIR_CLIENT_RC == 0)) || fail "rc_pingpong: server $PAIR_SERVER_RC, client $PAIR_CLIENT_RC"
page "$EMU_WORK/after_short.html"
dom "$EMU_WORK/after_short.html" timeline >"$EMU_WORK/timeline.txt"
sends=$(grep -c '^RC_SEND_ONLY psn 0x[0-9a-f]* 64 B$' "$EMU_WORK/timeline.txt" || true)
((sends == 6)) || fail "the page's timeline shows $sends SENDs, not 6: $(head -20 "$EMU_WORK/timeline.txt")"
lkey=$(grep -ho 'ibv_reg_mr(.*) = mr(len=64 lkey=0x[0-9a-f]*' $(grep -l '^# clock .* host=1$' "$RUN"/*.trace) | grep -o '0x[0-9a-f]*$')
grep -q "^DMA SEND payload into receive buffer of MR lkey $lkey " "$EMU_WORK/timeline.txt" ||
    fail "the timeline does not show the DMA into host 1's MR (lkey $lkey)"
ok "the timeline shows the 6 SENDs and the DMA into host 1's MR"

step "a server waiting for its client: its QP in INIT, its MR's keys"
LONG=$EMU_WORK/long
mkdir -p "$LONG"
RDMAEMU_TRACE=$LONG/server.trace "$RDMAEMU" run --host 1 -- ibv_rc_pingpong -g 0 -n 1000000 -s 64 -p 18731 >"$EMU_WORK/long.server" 2>&1 &
server=$!
emu_bg_register $server
wait_tcp_listen 18731 20 $server || fail "the server did not listen: $(cat "$EMU_WORK/long.server")"
page "$EMU_WORK/waiting.html"
[[ $(dom "$EMU_WORK/waiting.html" updates) -ge 2 ]] || fail "the page did not poll /status.json again"
[[ $(dom "$EMU_WORK/waiting.html" 1 qp-state) == INIT ]] || fail "host 1's QP is not shown in INIT: $(dom "$EMU_WORK/waiting.html" 1 qp-state)"
read -r want_lkey want_rkey < <(grep -o 'mr(len=64 lkey=0x[0-9a-f]* rkey=0x[0-9a-f]*' "$LONG/server.trace" | sed 's/.*lkey=\([^ ]*\) rkey=\(.*\)/\1 \2/')
[[ $(dom "$EMU_WORK/waiting.html" 1 mr-lkey) == "$want_lkey" && $(dom "$EMU_WORK/waiting.html" 1 mr-rkey) == "$want_rkey" ]] ||
    fail "host 1's MR shows lkey $(dom "$EMU_WORK/waiting.html" 1 mr-lkey) rkey $(dom "$EMU_WORK/waiting.html" 1 mr-rkey), the trace $want_lkey $want_rkey"
[[ $(dom "$EMU_WORK/waiting.html" 1 mr-access) == IBV_ACCESS_LOCAL_WRITE ]] || fail "the MR's rights are not shown"
ok "QP in INIT, MR lkey $want_lkey rkey $want_rkey IBV_ACCESS_LOCAL_WRITE"

step "the client runs: both QPs in RTS, the counters grow"
"$RDMAEMU" run --host 2 -- ibv_rc_pingpong -g 0 -n 1000000 -s 64 -p 18731 127.0.0.1 >"$EMU_WORK/long.client" 2>&1 &
client=$!
emu_bg_register $client
for _ in $(seq 100); do
    emu_status >/dev/null
    [[ $(emu_json "[q['state'] for s in host(2).get('sessions', []) for q in s.get('qps', [])]") == "['RTS']" ]] && break
    sleep 0.1
done
page "$EMU_WORK/running1.html" --hide-scrollbars --window-size=1400,1600 --screenshot="$OUT/ui.png"
page "$EMU_WORK/running1.html"
sleep 1
page "$EMU_WORK/running2.html"
kill -0 $client 2>/dev/null || fail "the client ended before the page was read: $(tail -3 "$EMU_WORK/long.client")"
for h in 1 2; do
    [[ $(dom "$EMU_WORK/running2.html" $h qp-state) == RTS ]] || fail "host $h's QP is not shown in RTS"
done
[[ $(dom "$EMU_WORK/running2.html" 2 qp-peer) == "$(emu_host 1 address)" ]] || fail "host 2's QP does not show host 1 as its peer"
[[ $(dom "$EMU_WORK/running2.html" 2 qp-dest_qpn) == "$(dom "$EMU_WORK/running2.html" 1 qp-qpn)" ]] ||
    fail "host 2's QP does not show host 1's QP as its peer QP"
tx1=$(dom "$EMU_WORK/running1.html" 2 counter tx_packets | head -1)
tx2=$(dom "$EMU_WORK/running2.html" 2 counter tx_packets | head -1)
psn1=$(dom "$EMU_WORK/running1.html" 2 qp-sq_psn)
psn2=$(dom "$EMU_WORK/running2.html" 2 qp-sq_psn)
((tx1 > 0 && tx2 > tx1)) || fail "host 2's tx_packets did not grow on the page: $tx1 then $tx2"
[[ $psn1 != "$psn2" ]] || fail "host 2's QP's SQ PSN did not move on the page: $psn1"
ok "RTS on both hosts; host 2 tx_packets $tx1 -> $tx2, SQ PSN $psn1 -> $psn2"
[[ -s $OUT/ui.png ]] || fail "no screenshot"
ok "screenshot: $OUT/ui.png"
kill $client $server 2>/dev/null || true
echo "PASS"
