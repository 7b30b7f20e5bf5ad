#!/usr/bin/env bash
# real_stacks: UCX, Open MPI over UCX and libfabric, unmodified Debian packages, on emulated
# hosts (docs/real-stacks.md). Only the user's normal choices are set (UCX_TLS, UCX_NET_DEVICES,
# mpirun's --mca pml ucx); no check of the stacks is switched off.
# - `ucx_info -d` on host 1 lists emu0:1 with rc_verbs and ud_verbs (UCX checks
#   /dev/infiniband/uverbs0 and reads the GID's ndev in sysfs);
# - ucx_perftest between hosts 1 and 2: tag_lat over rc_verbs (UD for wire-up), tag_bw over
#   ud_verbs alone (UCX finds the DGID by the network header type in wc.sl), ucp_put_bw and
#   ucp_get over rc_verbs;
# - Open MPI over UCX, one rank per host (mpirun itself on host 1, in the set's network, where
#   its ranks reach it): mpi_ping.c, 1 B to 1 MiB both ways checked byte for byte, an allreduce;
# - `fi_info -p verbs` lists an FI_EP_MSG endpoint on emu0 (libfabric wants a non-loopback
#   interface holding the GID's address: host1).
# usage: real_stacks.sh RDMAEMU MPI_PING_SOURCE
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
MPI_SRC=$2
for p in ucx_info ucx_perftest mpirun mpicc fi_info; do
    command -v "$p" >/dev/null ||
        fail "$p not found (packages ucx-utils, openmpi-bin, libopenmpi-dev, libfabric-bin; make test installs them)"
done
emu_up 2
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

step "ucx_perftest between hosts 1 and 2"
perftest rc_verbs,ud_verbs tag_lat -n 1000 -s 8
ok "tag_lat over rc_verbs"
perftest ud_verbs tag_bw -n 200 -s 65536
ok "tag_bw over ud_verbs alone"
perftest rc_verbs,ud_verbs ucp_put_bw -n 200 -s 65536
ok "ucp_put_bw over rc_verbs"
perftest rc_verbs,ud_verbs ucp_get -n 200 -s 65536
ok "ucp_get over rc_verbs"

step "Open MPI over UCX: a rank on each host"
mpicc -O2 -o "$EMU_WORK/mpi_ping" "$MPI_SRC" || fail "mpicc $MPI_SRC failed"
root_ok=()
[[ $(id -u) == 0 ]] && root_ok=(--allow-run-as-root)
export UCX_TLS=rc_verbs,ud_verbs,self
ctx=(-x RDMAEMU_RUNTIME_DIR -x UCX_TLS -x UCX_NET_DEVICES -np 1)
rc=0
timeout 120 "$RDMAEMU" run --host 1 -- mpirun "${root_ok[@]}" --mca pml ucx --mca btl self \
    "${ctx[@]}" "$RDMAEMU" run --host 1 -- "$EMU_WORK/mpi_ping" : \
    "${ctx[@]}" "$RDMAEMU" run --host 2 -- "$EMU_WORK/mpi_ping" >"$EMU_WORK/mpi.out" 2>&1 || rc=$?
cat "$EMU_WORK/mpi.out"
((rc == 0)) && grep -q '^mpi_ping: ok' "$EMU_WORK/mpi.out" || fail "mpirun: exit $rc"
ok "mpi_ping over UCX between host 1 and host 2"
unset UCX_TLS

step "fi_info -p verbs on host 1"
"$RDMAEMU" run --host 1 -- fi_info -p verbs >"$EMU_WORK/fi_info" 2>&1 || fail "fi_info -p verbs failed: $(cat "$EMU_WORK/fi_info")"
cat "$EMU_WORK/fi_info"
python3 - "$EMU_WORK/fi_info" <<'EOF' || fail "fi_info -p verbs lists no FI_EP_MSG endpoint on emu0"
import sys
entries = open(sys.argv[1]).read().split("provider:")
sys.exit(0 if any("domain: emu0\n" in e and "type: FI_EP_MSG" in e for e in entries) else 1)
EOF
ok "fi_info -p verbs lists FI_EP_MSG on emu0"
