#!/usr/bin/env bash
# forged_acks: an unprivileged local process (uid 65534, plain UDP sockets: forge.py) floods both
# hosts of a running ib_write_bw with forged ACKs, NAKs and RNR NAKs: valid ICRC, random PSNs,
# each claiming to come from the other host's address, to the QPNs the hosts used to hand out
# first (0x11..0x50, sequential) and to the QPs' real QPNs (from rdmaemu status). The forger
# cannot bind the hosts' RoCE port, so every packet comes from another port: the hosts drop them
# all, each counted once: wrong_source while it names a live QP, unknown_qp otherwise (how many
# reach the QP depends on how the forgery and perftest's run overlap on a loaded machine), none
# taken as a response (ghost_responses), and ib_write_bw completes normally.
#
# usage: forged_acks.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if ((EUID != 0)); then
    echo "skip: needs root, to run the forger as another user (uid 65534)"
    exit 77
fi
emu_setup "$1"
FORGE=$(dirname "${BASH_SOURCE[0]}")/forge.py
command -v ib_write_bw >/dev/null || fail "perftest not installed"
command -v setpriv >/dev/null || fail "setpriv (util-linux) not installed"

emu_up 2
port=4791 # rdmaemu up's default
addrs="$(emu_host 1 address),$(emu_host 2 address)"

step "ib_write_bw for 12 s between hosts 1 and 2"
tcp=$(free_tcp_port)
"$RDMAEMU" run --host 1 -- ib_write_bw -p "$tcp" -D 12 >"$EMU_WORK/bw.server" 2>&1 &
spid=$!
emu_bg_register "$spid"
wait_tcp_listen "$tcp" 20 "$spid" || fail "ib_write_bw server did not listen: $(cat "$EMU_WORK/bw.server")"
timeout -k 5 60 "$RDMAEMU" run --host 2 -- ib_write_bw -p "$tcp" -D 12 127.0.0.1 \
    >"$EMU_WORK/bw.client" 2>&1 &
cpid=$!
emu_bg_register "$cpid"

# The real QPNs, once both ends are connected (the server's QP may stay in RTR).
connected_qpns() {
    emu_status >/dev/null
    emu_json "','.join(str(q['qpn']) for h in d['hosts'] for s in h.get('sessions', []) for q in s['qps'] if q['type'] == 'RC' and q['state'] in ('RTR', 'RTS'))"
}
real=""
for _ in $(seq 100); do
    real=$(connected_qpns)
    [[ $real == *,* ]] && break
    kill -0 "$cpid" 2>/dev/null || break
    sleep 0.1
done
[[ $real == *,* ]] || fail "no connected RC QP on both hosts within 10 s (QPNs: '$real')"
ok "ib_write_bw connected: QPNs $real"

step "uid 65534 forges ACKs and NAKs for 3 s"
emu_status >/dev/null
unknown_before=("" "$(emu_json "host(1)['counters']['unknown_qp']")" "$(emu_json "host(2)['counters']['unknown_qp']")")
plausible=$(python3 -c 'print(",".join(str(q) for q in range(0x11, 0x51)))')
rc=0
setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$port" 3 "$addrs" \
    "$plausible,$real" <"$FORGE" >"$EMU_WORK/forge.out" 2>&1 || rc=$?
cat "$EMU_WORK/forge.out"
((rc == 0)) || fail "forge.py exited $rc (3: it could bind a host's RoCE port)"
sent=$(awk '/^sent / {print $2}' "$EMU_WORK/forge.out")
((sent > 1000)) || fail "the forger sent only $sent packets"

rc=0
wait "$cpid" || rc=$?
((rc == 0)) || { cat "$EMU_WORK/bw.client" >&2; fail "ib_write_bw client exited $rc under forged packets"; }
for _ in $(seq 100); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
rc=0
wait "$spid" || rc=$?
((rc == 0)) || { cat "$EMU_WORK/bw.server" >&2; fail "ib_write_bw server exited $rc under forged packets"; }
rows=$(perftest_rows "$EMU_WORK/bw.client" | wc -l)
((rows == 1)) || { cat "$EMU_WORK/bw.client" >&2; fail "ib_write_bw client printed $rows result rows"; }
ok "ib_write_bw completed: $(perftest_rows "$EMU_WORK/bw.client")"

step "every forged packet was dropped and counted"
emu_status >/dev/null
for h in 1 2; do
    addr=$(emu_json "host($h)['address']")
    to=$(awk -v a="$addr" '$1 == "sent_to" && $2 == a {print $3}' "$EMU_WORK/forge.out")
    counter() { emu_json "host($h)['counters']['$1']"; }
    wrong=$(counter wrong_source) ghosts=$(counter ghost_responses) icrc=$(counter icrc_errors)
    unknown=$(($(counter unknown_qp) - ${unknown_before[h]}))
    ((icrc == 0)) || fail "host $h: $icrc ICRC errors: the forged ICRC is wrong, the test proves nothing"
    ((wrong > 0)) || fail "host $h: no forged packet reached its live QP (wrong_source 0)"
    ((ghosts == 0)) || fail "host $h: $ghosts forged packets were taken as responses (ghost_responses)"
    # The kernel may lose a few to a full socket buffer (its RcvbufErrors, not the NIC's).
    (((wrong + unknown) * 100 >= to * 99)) ||
        fail "host $h: $to forged packets, but only $wrong (wrong_source) + $unknown (unknown_qp) dropped and counted"
    ok "host $h: $to forged packets: wrong_source $wrong, unknown_qp $unknown"
done
