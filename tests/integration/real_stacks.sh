#!/usr/bin/env bash
# real_stacks: UCX, Open MPI over UCX and libfabric, unmodified Debian packages, on emulated
# hosts (docs/real-stacks.md). Only the user's normal choices are set (UCX_TLS, UCX_NET_DEVICES,
# mpirun's --mca pml ucx); no check of the stacks is switched off.
# - `ucx_info -d` on host 1 lists emu0:1 with rc_verbs and ud_verbs (UCX checks
#   /dev/infiniband/uverbs0 and reads the GID's ndev in sysfs);
# - ucx_perftest between hosts 1 and 2: tag_lat, tag_bw, ucp_put_bw and ucp_get, each over
#   rc_verbs (UD for the wire-up) and over ud_verbs alone (UCX finds the DGID by the network
#   header type in wc.sl);
# - Open MPI over UCX, one rank per host (mpirun itself on host 1, in the set's network, where
#   its ranks reach it): mpi_ping.c, 1 B to 1 MiB both ways checked byte for byte, one-sided
#   put and get (osc ucx) checked byte for byte, an allreduce; NetPIPE's NPopenmpi to 1 MiB;
# - `fi_info -p verbs` lists an FI_EP_MSG endpoint and a `verbs;ofi_rxm` RDM one on emu0
#   (libfabric wants a non-loopback interface holding the GID's address: host1); fi_pingpong
#   over `verbs` MSG, `verbs;ofi_rxm` RDM and `verbs;ofi_rxd` RDM, each with -v;
# - qperf -cm1 (rdma_cm: qperf's own address vectors have no GRH) rc_lat, rc_bw,
#   rc_rdma_write_bw, rc_rdma_read_lat;
# then all but ucx_info, NetPIPE and fi_info again on a wire that drops 1% of the packets.
# The set is on subnet 0: fi_pingpong has no option for a source address, and libfabric's verbs
# provider binds `localhost` given none, which is host 1's address there (127.0.0.1).
# usage: real_stacks.sh RDMAEMU MPI_PING_SOURCE
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
MPI_SRC=$2
for p in ucx_info ucx_perftest mpirun mpicc NPopenmpi fi_info fi_pingpong qperf; do
    command -v "$p" >/dev/null ||
        fail "$p not found (packages ucx-utils, openmpi-bin, libopenmpi-dev, netpipe-openmpi, libfabric-bin, qperf; make test installs them)"
done
emu_up 2 --subnet 0
a1=$(emu_host 1 address)
export UCX_NET_DEVICES=emu0:1
unset UCX_UD_ETH_DGID_CHECK

step "ucx_info -d on host 1"
"$RDMAEMU" run --host 1 -- ucx_info -d >"$EMU_WORK/ucx_info" 2>&1 || fail "ucx_info -d failed: $(tail -20 "$EMU_WORK/ucx_info")"
python3 - "$EMU_WORK/ucx_info" <<'EOF' || fail "ucx_info -d: $(grep -E 'Memory domain|Transport|Device' "$EMU_WORK/ucx_info")"
import re, sys
md = None
found = set()
for line in open(sys.argv[1]):
    m = re.match(r"#\s+Memory domain:\s+(\S+)", line)
    if m: md = m.group(1)
    m = re.match(r"#\s+Transport:\s+(\S+)", line)
    if m: tl = m.group(1)
    m = re.match(r"#\s+Device:\s+(\S+)", line)
    if m and md == "emu0": found.add((tl, m.group(1)))
print(sorted(found))
sys.exit(0 if {("rc_verbs", "emu0:1"), ("ud_verbs", "emu0:1")} <= found else 1)
EOF
ok "ucx_info lists rc_verbs and ud_verbs on emu0:1"

# perftest TLS TEST [ARGS...]: server on host 1, client on host 2; prints the client's Final line.
perftest() {
    local tls=$1 test=$2
    shift 2
    local port
    port=$(free_tcp_port)
    UCX_TLS=$tls "$RDMAEMU" run --host 1 -- ucx_perftest -p "$port" >"$EMU_WORK/$test.server" 2>&1 &
    local spid=$!
    emu_bg_register "$spid"
    wait_tcp_listen "$port" 20 "$spid" || fail "ucx_perftest server did not listen: $(cat "$EMU_WORK/$test.server")"
    local rc=0
    UCX_TLS=$tls timeout 60 "$RDMAEMU" run --host 2 -- ucx_perftest -p "$port" "$a1" -t "$test" "$@" \
        >"$EMU_WORK/$test.client" 2>&1 || rc=$?
    wait "$spid" || true
    ((rc == 0)) || fail "ucx_perftest -t $test over $tls: exit $rc: $(tail -20 "$EMU_WORK/$test.client")"
    grep -E '^Final:' "$EMU_WORK/$test.client" ||
        fail "ucx_perftest -t $test over $tls printed no Final line: $(tail -20 "$EMU_WORK/$test.client")"
}

# Each test over rc_verbs (UD for the wire-up) and over ud_verbs alone.
ucx_perftests() {
    local tls
    for tls in rc_verbs,ud_verbs ud_verbs; do
        perftest "$tls" tag_lat -n 1000 -s 8
        ok "tag_lat over $tls"
        perftest "$tls" tag_bw -n 200 -s 65536
        ok "tag_bw over $tls"
        perftest "$tls" ucp_put_bw -n 200 -s 65536
        ok "ucp_put_bw over $tls"
        perftest "$tls" ucp_get -n 200 -s 65536
        ok "ucp_get over $tls"
    done
}
step "ucx_perftest between hosts 1 and 2"
ucx_perftests

mpicc -O2 -o "$EMU_WORK/mpi_ping" "$MPI_SRC" || fail "mpicc $MPI_SRC failed"
root_ok=()
[[ $(id -u) == 0 ]] && root_ok=(--allow-run-as-root)

# mpi LABEL PROGRAM [ARGS...]: one rank of PROGRAM on each host, mpirun on host 1; output in
# $EMU_WORK/LABEL.out.
mpi() {
    local label=$1
    shift
    local ctx=(-x RDMAEMU_RUNTIME_DIR -x UCX_TLS -x UCX_NET_DEVICES -np 1) rc=0
    UCX_TLS=rc_verbs,ud_verbs,self timeout 180 "$RDMAEMU" run --host 1 -- mpirun "${root_ok[@]}" \
        --mca pml ucx --mca osc ucx --mca btl self \
        "${ctx[@]}" "$RDMAEMU" run --host 1 -- "$@" : \
        "${ctx[@]}" "$RDMAEMU" run --host 2 -- "$@" >"$EMU_WORK/$label.out" 2>&1 || rc=$?
    ((rc == 0)) || fail "mpirun $*: exit $rc: $(tail -20 "$EMU_WORK/$label.out")"
}

mpi_ping() {
    mpi mpi_ping "$EMU_WORK/mpi_ping"
    grep '^mpi_ping: ok' "$EMU_WORK/mpi_ping.out" || fail "mpi_ping: $(tail -20 "$EMU_WORK/mpi_ping.out")"
}

# fi_pp PROVIDER ENDPOINT SIZE ITERATIONS [lossy]: fi_pingpong -v, server on host 1 (its control
# channel on a TCP port), client on host 2; both ends must report every message acknowledged.
# `lossy`: a lossy wire, where the teardown after the transfer may fail (below).
fi_pp() {
    local prov=$1 ep=$2 size=$3 iters=$4 lossy=${5:-} port label
    label=fi_pp_$(tr -c 'a-z' _ <<<"$prov$ep")
    port=$(free_tcp_port)
    local args=(-p "$prov" -e "$ep" -S "$size" -I "$iters" -v)
    "$RDMAEMU" run --host 1 -- timeout 30 fi_pingpong "${args[@]}" -B "$port" >"$EMU_WORK/$label.server" 2>&1 &
    local spid=$!
    emu_bg_register "$spid"
    wait_tcp_listen "$port" 20 "$spid" ||
        fail "fi_pingpong $prov -e $ep: the server did not listen: $(tail "$EMU_WORK/$label.server")"
    # all_acked SIDE: the row of SIDE's report with every message sent and acknowledged.
    all_acked() { grep -E "^[0-9]+[kmg]? +$iters +=$iters " "$EMU_WORK/$label.$1"; }
    local rc=0 src=0
    timeout 60 "$RDMAEMU" run --host 2 -- fi_pingpong "${args[@]}" -P "$port" "$a1" \
        >"$EMU_WORK/$label.client" 2>&1 || rc=$?
    wait "$spid" || src=$?
    # On a lossy wire the last message's ACK can be lost after its receiver has exited: the
    # sender's retries then find nobody (ofi_rxd waits for ever, MSG and rxm fail with "transport
    # retry counter exceeded"), as on any lossy fabric. Once both ends reported every message
    # acknowledged, that teardown is not held against the transfer; the note says it happened.
    if [[ $lossy == lossy ]] && ((rc != 0 || src != 0)) &&
        all_acked server >/dev/null && all_acked client >/dev/null; then
        echo "note: fi_pingpong -p '$prov' -e $ep: both ends reported every message; then client exit $rc, server exit $src in the teardown (a last ACK lost on the lossy wire)"
        rc=0 src=0
    fi
    ((rc == 0 && src == 0)) ||
        fail "fi_pingpong -p '$prov' -e $ep: client exit $rc, server exit $src: $(grep -v '^\[debug\]' "$EMU_WORK/$label.client" | tail -5) / $(grep -v '^\[debug\]' "$EMU_WORK/$label.server" | tail -5)"
    local side row
    for side in client server; do
        row=$(all_acked "$side") ||
            fail "fi_pingpong -p '$prov' -e $ep: the $side reports no row with $iters sent, all acknowledged: $(grep -v '^\[debug\]' "$EMU_WORK/$label.$side" | tail -5)"
    done
    echo "$row"
}

# qperf_cm: qperf's server on host 1, qperf -cm1 on host 2; every test must report a figure.
# Debian's qperf 0.4.11 sends its server's rdma_cm port before it calls rdma_listen (fixed
# upstream after 0.4.11: "Fix rdmacm race", 118a571), so now and then a REQ reaches host 1
# before the listener and is rejected, as the kernel's CM rejects it (invalid service ID; the
# log shows "nobody listens" just before "listening"). Such a run is tried again, at most twice,
# and only when host 1 counted that REQ (cm req_no_listener).
cm_req_no_listener() {
    emu_status >/dev/null
    emu_json "host($1)['cm']['cm_req_no_listener']"
}

# qperf_cm [lossy]
qperf_cm() {
    local try before
    for try in 1 2 3; do
        before=$(cm_req_no_listener 1)
        qperf_cm_once "${1:-}" && return 0
        grep -q 'Event rejected' "$EMU_WORK/qperf.client" || break
        (($(cm_req_no_listener 1) > before)) || break
        echo "note: qperf 0.4.11's REQ came before its server's rdma_listen (its own race, fixed upstream after 0.4.11); trying again"
    done
    fail "qperf -cm1 failed"
}

# qperf_cm_once [lossy]
# On the lossy wire qperf gets -to 20: a lost RTU is repaired only when the server's REP goes
# again, after the REQ's CM response timeout (4.1 s, rdma_cm's CMA_CM_RESPONSE_TIMEOUT 20, IBA
# 12.7.34), and all that while the client waits for the server's node information over TCP for
# qperf's default 5 s (failed once in CI: "failed to receive node information: timed out").
qperf_cm_once() {
    local port tests=(rc_lat rc_bw rc_rdma_write_bw rc_rdma_read_lat) qperf_timeout=()
    [[ ${1:-} == lossy ]] && qperf_timeout=(-to 20)
    port=$(free_tcp_port)
    "$RDMAEMU" run --host 1 -- qperf -lp "$port" >"$EMU_WORK/qperf.server" 2>&1 &
    local spid=$!
    emu_bg_register "$spid"
    wait_tcp_listen "$port" 20 "$spid" || fail "qperf's server did not listen: $(cat "$EMU_WORK/qperf.server")"
    local rc=0
    timeout 120 "$RDMAEMU" run --host 2 -- qperf -cm1 -lp "$port" -t 1 "${qperf_timeout[@]}" "$a1" "${tests[@]}" \
        >"$EMU_WORK/qperf.client" 2>&1 || rc=$?
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    cat "$EMU_WORK/qperf.client"
    ((rc == 0)) || return 1
    python3 - "$EMU_WORK/qperf.client" "${tests[@]}" <<'EOF' || return 1
import re, sys
text = open(sys.argv[1]).read()
found = [t for t in sys.argv[2:] if re.search("^" + t + r":\n\s+(latency|bw)\s+=\s+[0-9.]+ \S+", text, re.M)]
sys.exit(0 if found == sys.argv[2:] and "failed" not in text else 1)
EOF
}

step "Open MPI over UCX: a rank on each host"
mpi_ping
ok "mpi_ping over UCX between host 1 and host 2 (send/recv, put/get, allreduce)"

step "NetPIPE over Open MPI, 1 B to 1 MiB"
mpi netpipe NPopenmpi -u 1048576 -o "$EMU_WORK/np.out"
tail -3 "$EMU_WORK/np.out"
awk '$1 >= 1048576 { big = 1 } END { exit !(big && NR > 50) }' "$EMU_WORK/np.out" ||
    fail "NPopenmpi did not reach 1 MiB: $(tail -3 "$EMU_WORK/np.out")"
ok "NPopenmpi to 1 MiB"

step "fi_info -p verbs on host 1"
"$RDMAEMU" run --host 1 -- fi_info -p verbs >"$EMU_WORK/fi_info" 2>&1 || fail "fi_info -p verbs failed: $(cat "$EMU_WORK/fi_info")"
cat "$EMU_WORK/fi_info"
python3 - "$EMU_WORK/fi_info" <<'EOF' || fail "fi_info -p verbs lists no FI_EP_MSG endpoint or no verbs;ofi_rxm RDM one on emu0"
import sys
entries = open(sys.argv[1]).read().split("provider:")
msg = any("domain: emu0\n" in e and "type: FI_EP_MSG" in e for e in entries)
rxm = any(e.strip().startswith("verbs;ofi_rxm") and "type: FI_EP_RDM" in e for e in entries)
sys.exit(0 if msg and rxm else 1)
EOF
ok "fi_info -p verbs lists FI_EP_MSG and verbs;ofi_rxm FI_EP_RDM on emu0"

# libfabric_and_qperf [lossy]
libfabric_and_qperf() {
    fi_pp verbs msg 65536 100 "${1:-}"
    ok "fi_pingpong -p verbs -e msg"
    fi_pp "verbs;ofi_rxm" rdm 65536 100 "${1:-}"
    ok "fi_pingpong -p 'verbs;ofi_rxm' -e rdm"
    fi_pp "verbs;ofi_rxd" rdm 4096 100 "${1:-}"
    ok "fi_pingpong -p 'verbs;ofi_rxd' -e rdm"
    qperf_cm "${1:-}"
    ok "qperf -cm1 rc_lat rc_bw rc_rdma_write_bw rc_rdma_read_lat"
}
step "libfabric's fi_pingpong and qperf -cm1"
libfabric_and_qperf

step "again on a wire that drops 1% of the packets"
timeout 30 "$RDMAEMU" down >/dev/null || fail "rdmaemu down failed"
emu_up 2 --subnet 0 --drop 0.01
ucx_perftests
mpi_ping
ok "mpi_ping over UCX"
libfabric_and_qperf lossy
emu_status >/dev/null
drops=$(emu_json "sum(host(i)['counters']['fault_drops'] for i in (1, 2))")
((drops > 0)) || fail "the lossy run dropped nothing (fault_drops $drops)"
ok "every stack completed on the lossy wire ($drops packets dropped)"
