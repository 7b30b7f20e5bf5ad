#!/usr/bin/env bash
# verbs_trace: RDMAEMU_TRACE writes one line per verb, work request and completion; the traces
# of two runs of the same ibv_rc_pingpong compare equal with `rdmaemu trace-compare`, and a trace
# with a different completion status or a missing verb does not. With -N -t (ibv_wr_* and
# ibv_start_poll/ibv_next_poll) the WRs and completions are traced as with the classic calls.
# trace_wrs checks, word for word, what a line shows: every SGE (addr, length, lkey), the remote
# address and rkey, immediate data, atomic operands, flag and enum names, QP numbers in hex and
# the event ibv_get_async_event returned. trace-compare refuses files that are not traces.
# rdma_cm: the CM calls of examples/cm_send_recv (run twice between two hosts) and of rping are
# verb lines and their events cm lines, in the same file as the verbs (one per process), word for
# word for the key ones, with the verbs librdmacm makes inside its calls not traced; the two runs
# compare equal, and a changed event does not.
#
# usage: verbs_trace.sh RDMAEMU TRACE_WRS EXAMPLES_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TRACE_WRS=$2
EXAMPLES=$3
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

A1=$(emu_host 1 address)
for run in 1 2; do
    step "rdma_cm: cm_send_recv run $run with RDMAEMU_TRACE"
    mkdir -p "$EMU_WORK/cm$run"
    export RDMAEMU_TRACE=$EMU_WORK/cm$run/%p.trace
    emu_cm_pair "cm$run" 7479 60 "$EXAMPLES/cm_send_recv" -s "$A1" -p 7479 -- \
        "$EXAMPLES/cm_send_recv" -p 7479 "$A1"
    unset RDMAEMU_TRACE
    if ((PAIR_SERVER_RC != 0 || PAIR_CLIENT_RC != 0)); then
        emu_cm_pair_dump "cm$run"
        fail "cm_send_recv run $run: server $PAIR_SERVER_RC, client $PAIR_CLIENT_RC"
    fi
    client=$(grep -l '^# rdmaemu verbs trace: .*cm_send_recv -p ' "$EMU_WORK/cm$run"/*.trace)
    server=$(grep -l '^# rdmaemu verbs trace: .*cm_send_recv -s ' "$EMU_WORK/cm$run"/*.trace)
    (($(ls "$EMU_WORK/cm$run" | wc -l) == 2)) && [[ -f $client && -f $server ]] ||
        fail "expected one trace file per process: $(ls "$EMU_WORK/cm$run")"
    cp "$client" "$EMU_WORK/cmclient$run.trace"
    cp "$server" "$EMU_WORK/cmserver$run.trace"
done

step "what an rdma_cm trace holds"
C=$EMU_WORK/cmclient1.trace
S=$EMU_WORK/cmserver1.trace
grep -v '^#' "$C" | grep -v -E ' (wr|wc) ' | cut -c22-
for t in "$C" "$S"; do
    (($(grep -c '^# rdmaemu verbs trace:' "$t") == 1)) || fail "$t: not one header (both libraries write one file)"
done
# word for word, after the time stamp and the thread id (IDs, QP numbers and ports are the run's)
expect_line() {
    local file=$1 pattern=$2
    # grep reads to the end (no -q): under pipefail, cut's SIGPIPE after an early match failed it.
    cut -c22- "$file" | grep -xE -- "$pattern" >/dev/null || { cut -c22- "$file" | grep -v -E '^(wr|wc) '; fail "not in $file: '$pattern'"; }
}
expect_line "$C" "verb rdma_getaddrinfo\(\"$A1\", \"7479\", \{flags=0 qp_type=0 port_space=RDMA_PS_TCP src=NULL dst=NULL\}\) = 0 \{flags=0 qp_type=IBV_QPT_RC port_space=RDMA_PS_TCP src=NULL dst=${A1//./\\.}:7479\}"
expect_line "$C" 'cm RDMA_CM_EVENT_ADDR_RESOLVED id=cm_id\([0-9]+\) status=0'
expect_line "$C" 'cm RDMA_CM_EVENT_ROUTE_RESOLVED id=cm_id\([0-9]+\) status=0'
expect_line "$C" 'verb rdma_create_ep\(\{.*\}, NULL, \{type=IBV_QPT_RC send_wr=1 recv_wr=1 send_sge=1 recv_sge=1 inline=0 sig_all=1\}\) = 0 cm_id\([0-9]+\) qp\(qpn=0x[0-9a-f]+ type=IBV_QPT_RC\)'
expect_line "$C" 'cm RDMA_CM_EVENT_ESTABLISHED id=cm_id\([0-9]+\) status=0 conn=\{private_data_len=[0-9]+ responder_resources=[0-9]+ initiator_depth=[0-9]+ flow_control=[0-9]+ retry_count=[0-9]+ rnr_retry_count=[0-9]+ srq=0 qp_num=0x[0-9a-f]+\}'
expect_line "$C" 'verb rdma_connect\(cm_id\([0-9]+\), NULL\) = 0'
expect_line "$C" 'verb rdma_disconnect\(cm_id\([0-9]+\)\) = 0'
expect_line "$C" 'verb rdma_destroy_ep\(cm_id\([0-9]+\)\)'
expect_line "$S" 'verb rdma_listen\(cm_id\([0-9]+\), 1\) = 0'
expect_line "$S" 'cm RDMA_CM_EVENT_CONNECT_REQUEST id=cm_id\([0-9]+\) listen_id=cm_id\([0-9]+\) status=0 conn=\{private_data_len=[0-9]+ responder_resources=[0-9]+ initiator_depth=[0-9]+ flow_control=[0-9]+ retry_count=[0-9]+ rnr_retry_count=[0-9]+ srq=0 qp_num=0x[0-9a-f]+\}'
expect_line "$S" 'verb rdma_get_request\(cm_id\([0-9]+\)\) = 0 cm_id\([0-9]+\)'
expect_line "$S" 'verb rdma_accept\(cm_id\([0-9]+\), NULL\) = 0'
expect_line "$S" 'cm RDMA_CM_EVENT_ESTABLISHED id=cm_id\([0-9]+\) status=0 .*'
ok "CM calls and events, word for word"
# The verbs librdmacm makes inside its calls are nested in them: rdma_create_ep's QP, CQs and
# PD, rdma_accept's ibv_modify_qp; the app's own (rdma_reg_msgs is ibv_reg_mr) are there.
grep -E ' verb ibv_(create_qp|create_cq|alloc_pd|modify_qp|open_device)\(' "$C" "$S" &&
    fail "a verb made inside a CM call is traced"
grep -q ' verb ibv_reg_mr(' "$C" || fail "the app's ibv_reg_mr (rdma_reg_msgs) is not traced"
ok "verbs inside CM calls are not traced; the app's own are"

step "two runs of cm_send_recv compare equal; a changed event does not"
for side in cmclient cmserver; do
    "$RDMAEMU" trace-compare "$EMU_WORK/${side}1.trace" "$EMU_WORK/${side}2.trace" >"$EMU_WORK/$side.cmp" ||
        { cat "$EMU_WORK/$side.cmp"; fail "$side traces of two identical runs differ"; }
    cat "$EMU_WORK/$side.cmp"
    grep -q '^cm events: [0-9]*, same$' "$EMU_WORK/$side.cmp" || fail "$side: no CM events compared"
done
ok "traces match"
sed '0,/ cm RDMA_CM_EVENT_ESTABLISHED id=\(cm_id([0-9]*)\) status=0/s// cm RDMA_CM_EVENT_REJECTED id=\1 status=28/' "$C" >"$EMU_WORK/cmchanged.trace"
rc=0
"$RDMAEMU" trace-compare "$C" "$EMU_WORK/cmchanged.trace" >"$EMU_WORK/cmchanged.cmp" || rc=$?
cat "$EMU_WORK/cmchanged.cmp"
((rc == 1)) && grep -q '^cm events differ at #3:' "$EMU_WORK/cmchanged.cmp" ||
    fail "trace-compare did not find the changed CM event (exit $rc)"
ok "changed CM event found"

step "rdma_cm: rping -C 10 (an event channel, a CM thread) with RDMAEMU_TRACE"
mkdir -p "$EMU_WORK/rping"
export RDMAEMU_TRACE=$EMU_WORK/rping/%p.trace
emu_cm_pair rping 7480 60 rping -s -a "$A1" -p 7480 -C 10 -- rping -c -a "$A1" -p 7480 -C 10
unset RDMAEMU_TRACE
((PAIR_SERVER_RC == 0 && PAIR_CLIENT_RC == 0)) ||
    { emu_cm_pair_dump rping; fail "rping: server $PAIR_SERVER_RC, client $PAIR_CLIENT_RC"; }
RC=$(grep -l '^# rdmaemu verbs trace: .*rping -c ' "$EMU_WORK/rping"/*.trace)
RS=$(grep -l '^# rdmaemu verbs trace: .*rping -s ' "$EMU_WORK/rping"/*.trace)
expect_line "$RC" 'verb rdma_create_event_channel\(\) = cm_channel\(fd=[0-9]+\)'
expect_line "$RC" 'verb rdma_create_id\(cm_channel\(fd=[0-9]+\), RDMA_PS_TCP\) = 0 cm_id\([0-9]+\)'
expect_line "$RC" "verb rdma_resolve_addr\\(cm_id\\([0-9]+\\), NULL, ${A1//./\\.}:7480, 2000\\) = 0"
expect_line "$RC" 'verb rdma_resolve_route\(cm_id\([0-9]+\), 2000\) = 0'
expect_line "$RC" 'verb rdma_create_qp\(cm_id\([0-9]+\), pd\([0-9]+\), \{type=IBV_QPT_RC .*\}\) = 0 qp\(qpn=0x[0-9a-f]+ type=IBV_QPT_RC\)'
expect_line "$RC" 'verb rdma_connect\(cm_id\([0-9]+\), \{private_data_len=0 responder_resources=1 initiator_depth=1 flow_control=0 retry_count=7 rnr_retry_count=7 srq=0 qp_num=0x0\}\) = 0'
expect_line "$RC" 'cm RDMA_CM_EVENT_ESTABLISHED id=cm_id\([0-9]+\) status=0 conn=\{.*\}'
expect_line "$RS" "verb rdma_bind_addr\\(cm_id\\([0-9]+\\), ${A1//./\\.}:7480\\) = 0 src=${A1//./\\.}:7480"
expect_line "$RS" 'cm RDMA_CM_EVENT_CONNECT_REQUEST id=cm_id\([0-9]+\) listen_id=cm_id\([0-9]+\) status=0 conn=\{.*\}'
expect_line "$RS" 'cm RDMA_CM_EVENT_DISCONNECTED id=cm_id\([0-9]+\) status=0'
expect_line "$RS" 'verb rdma_destroy_id\(cm_id\([0-9]+\)\) = 0'
ok "rping's CM calls and events"
echo "verbs_trace: all checks passed"
