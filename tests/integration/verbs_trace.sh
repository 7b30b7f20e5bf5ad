#!/usr/bin/env bash
# verbs_trace: RDMAEMU_TRACE writes one line per verb, work request and completion; the traces
# of two runs of the same ibv_rc_pingpong compare equal with `rdmaemu trace-compare`, and a trace
# with a different completion status or a missing verb does not. With -N -t (ibv_wr_* and
# ibv_start_poll/ibv_next_poll) the WRs and completions are traced as with the classic calls.
# trace_wrs checks, word for word, what a line shows: every SGE (addr, length, lkey), the remote
# address and rkey, immediate data, atomic operands, flag and enum names, QP numbers in hex and
# the event ibv_get_async_event returned. trace-compare refuses files that are not traces.
#
# usage: verbs_trace.sh RDMAEMU TRACE_WRS
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TRACE_WRS=$2
emu_setup "$1"
emu_up 2

for run in 1 2; do
    step "ibv_rc_pingpong run $run with RDMAEMU_TRACE"
    mkdir -p "$EMU_WORK/run$run"
    export RDMAEMU_TRACE=$EMU_WORK/run$run/%p.trace
    emu_pair "pingpong$run" 1 2 60 -- ibv_rc_pingpong -g 0 -n 20 -s 512 -p 18615
    unset RDMAEMU_TRACE
    ((PAIR_SERVER_RC == 0 && PAIR_CLIENT_RC == 0)) ||
        fail "rc_pingpong run $run: server $PAIR_SERVER_RC, client $PAIR_CLIENT_RC"
    client=$(grep -l '^# rdmaemu verbs trace: .* 127\.0\.0\.1$' "$EMU_WORK/run$run"/*.trace)
    server=$(grep -L '^# rdmaemu verbs trace: .* 127\.0\.0\.1$' "$EMU_WORK/run$run"/*.trace)
    [[ -f $client && -f $server ]] || fail "expected one client and one server trace: $(ls "$EMU_WORK/run$run")"
    cp "$client" "$EMU_WORK/client$run.trace"
    cp "$server" "$EMU_WORK/server$run.trace"
done

step "what a trace holds"
T=$EMU_WORK/client1.trace
head -12 "$T"
for verb in ibv_get_device_list ibv_open_device ibv_alloc_pd ibv_reg_mr ibv_create_cq ibv_create_qp \
    ibv_modify_qp ibv_destroy_qp ibv_dereg_mr ibv_dealloc_pd ibv_close_device; do
    grep -q " verb $verb(" "$T" || fail "no $verb in the client trace"
done
ok "the setup verbs are there"
sends=$(grep -c ' wr send qp=0x[0-9a-f]* wr_id=2 opcode=IBV_WR_SEND ' "$T")
recvs=$(grep -c ' wr recv qp=0x[0-9a-f]* ' "$T")
wcs=$(grep -c ' wc IBV_WC_SUCCESS ' "$T")
# rc_pingpong -n 20: 20 sends, 20 receives completed; the receive queue is filled first (500).
((sends == 20)) || fail "expected 20 send WRs, found $sends"
((recvs >= 500)) || fail "expected at least 500 receive WRs, found $recvs"
((wcs == 40)) || fail "expected 40 successful completions, found $wcs"
ok "20 sends, $recvs receives posted, 40 successful completions"

step "the same program twice compares equal"
for side in client server; do
    "$RDMAEMU" trace-compare "$EMU_WORK/${side}1.trace" "$EMU_WORK/${side}2.trace" >"$EMU_WORK/$side.cmp" ||
        { cat "$EMU_WORK/$side.cmp"; fail "$side traces of two identical runs differ"; }
    cat "$EMU_WORK/$side.cmp"
    ok "$side: traces match"
done

step "the new post-send API and extended CQ polling (ibv_rc_pingpong -N -t) trace the same WRs"
mkdir -p "$EMU_WORK/newapi"
export RDMAEMU_TRACE=$EMU_WORK/newapi/%p.trace
emu_pair newapi 1 2 60 -- ibv_rc_pingpong -g 0 -n 20 -s 512 -p 18616 -N -t
unset RDMAEMU_TRACE
((PAIR_SERVER_RC == 0 && PAIR_CLIENT_RC == 0)) ||
    fail "rc_pingpong -N -t: server $PAIR_SERVER_RC, client $PAIR_CLIENT_RC"
N=$(grep -l '^# rdmaemu verbs trace: .* 127\.0\.0\.1$' "$EMU_WORK/newapi"/*.trace)
grep -q ' verb ibv_create_qp_ex(' "$N" && grep -q ' verb ibv_create_cq_ex(' "$N" ||
    fail "the -N -t client trace has no ibv_create_qp_ex / ibv_create_cq_ex"
send_line='wr send qp=0x[0-9a-f]* wr_id=2 opcode=IBV_WR_SEND flags=IBV_SEND_SIGNALED sge=1 len=512 sg_list\[0\]={addr=0x[0-9a-f]* length=512 lkey=0x[0-9a-f]*}$'
sends=$(grep -c " $send_line" "$N")
classic=$(grep -c " $send_line" "$T")
wcs=$(grep -c ' wc IBV_WC_SUCCESS opcode=IBV_WC_\(SEND\|RECV\) ' "$N")
((sends == 20)) || fail "-N: expected 20 send WRs from ibv_wr_send, found $sends"
((classic == 20)) || fail "the classic run's send WRs are not those of ibv_wr_send: $classic of 20"
((wcs == 40)) || fail "-t: expected 40 successful completions from ibv_start_poll/next_poll, found $wcs"
ok "ibv_wr_send: 20 send WRs; ibv_start_poll/ibv_next_poll: 40 completions"
rc=0
"$RDMAEMU" trace-compare "$T" "$N" >"$EMU_WORK/newapi.cmp" || rc=$?
cat "$EMU_WORK/newapi.cmp"
((rc == 1)) && grep -q '^verbs differ at' "$EMU_WORK/newapi.cmp" ||
    fail "trace-compare of the classic and -N -t traces: expected only the verbs to differ"
grep -qE '^(work requests|completion statuses|completion opcodes) differ' "$EMU_WORK/newapi.cmp" &&
    fail "the -N -t WRs or completions differ from the classic run's"
ok "the WRs and completions of -N -t match the classic run's; only the create verbs differ"

step "a different outcome does not"
sed '0,/ wc IBV_WC_SUCCESS /s// wc IBV_WC_REM_ACCESS_ERR /' "$T" >"$EMU_WORK/changed.trace"
rc=0
"$RDMAEMU" trace-compare "$T" "$EMU_WORK/changed.trace" >"$EMU_WORK/changed.cmp" || rc=$?
cat "$EMU_WORK/changed.cmp"
((rc == 1)) || fail "trace-compare exited $rc for a changed completion status"
grep -q '^completion statuses differ at #1:' "$EMU_WORK/changed.cmp" || fail "the difference is not named"
ok "changed completion status found"
grep -v ' verb ibv_create_cq(' "$T" >"$EMU_WORK/dropped.trace"
rc=0
"$RDMAEMU" trace-compare "$T" "$EMU_WORK/dropped.trace" >"$EMU_WORK/dropped.cmp" || rc=$?
((rc == 1)) && grep -q '^verbs differ at' "$EMU_WORK/dropped.cmp" ||
    { cat "$EMU_WORK/dropped.cmp"; fail "a missing verb was not found"; }
ok "missing verb found"

step "files that are no traces are refused"
rc=0
"$RDMAEMU" trace-compare /etc/passwd /etc/hostname >"$EMU_WORK/notrace.cmp" 2>&1 || rc=$?
cat "$EMU_WORK/notrace.cmp"
((rc == 4)) || fail "trace-compare of /etc/passwd and /etc/hostname exited $rc, not 4"
grep -q '^rdmaemu: /etc/passwd is not a verbs trace' "$EMU_WORK/notrace.cmp" ||
    fail "trace-compare does not say /etc/passwd is no trace"
grep -q 'traces match' "$EMU_WORK/notrace.cmp" && fail "trace-compare says two non-traces match"
ok "refused"

step "what a line shows: SGEs, remote address and rkey, immediate data, atomics, names, events"
mkdir -p "$EMU_WORK/wrs"
RDMAEMU_TRACE=$EMU_WORK/wrs/%p.trace "$RDMAEMU" run --host 1 -- "$TRACE_WRS" >"$EMU_WORK/wrs.out" 2>&1 ||
    { cat "$EMU_WORK/wrs.out"; fail "trace_wrs failed"; }
W=$(ls "$EMU_WORK"/wrs/*.trace)
# After the time stamp and the thread id ("%12.6f %7d ").
cut -c22- "$W" >"$EMU_WORK/wrs.lines"
n=0
while IFS= read -r line; do
    want=${line#trace: }
    grep -qxF -- "$want" "$EMU_WORK/wrs.lines" || { grep -F "$(cut -c1-30 <<<"$want")" "$EMU_WORK/wrs.lines" | head -n 3; fail "not in the trace: '$want'"; }
    n=$((n + 1))
done < <(grep '^trace: ' "$EMU_WORK/wrs.out")
((n >= 14)) || fail "trace_wrs expected only $n lines"
ok "$n lines word for word"
grep -E ' (wr|wc) .* qp=[0-9]+ ' "$W" && fail "a QP number in decimal"
ok "QP numbers in hex throughout"
echo "verbs_trace: all checks passed"
