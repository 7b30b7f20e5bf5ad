# interop.sh: the interop checks of the VM tests (issue 16), sourced by checks.sh in the guest.
# An emulated host and Linux Soft-RoCE talk RoCE v2 to each other: a veth pair joins the VM's
# root namespace, where rxe1 is Soft-RoCE on one end (10.214.0.1), and a namespace of ours,
# where an emulated host (`rdmaemu up --address 10.214.0.2`) holds the other end. rxe's socket
# lives in the root namespace (rxe_net.c opens it in init_net), so 4791 is free in ours, and
# every packet between them crosses the veth as it would cross a network: rxe sends its own
# source port per QP, DF and an incrementing IP ID, and checks our ICRCs; we check its.
#   interop_rc_pingpong   ibv_rc_pingpong -s 1, 4096, 65536, 1 MiB, -e; each side as server
#   interop_ud_srq        ibv_ud_pingpong, ibv_srq_pingpong, --chk; each side as server
#   interop_perftest      ib_{send,write,read,atomic}_{bw,lat}; each side as server
#   interop_wire          a capture on the veth itself (wire_capture.py): RC, UD, WRITE and READ
#                         traffic both ways, every ICRC right for the header it had on the wire
#   interop_lossy         ib_write_bw and ib_read_bw 64 KiB with rdmaemu
#                         up --drop 0.01 on our side and netem losing 1% of rxe's requests, each
#                         side as server, captured on the veth: each side NAKs the other's gaps,
#                         the other resends
#   interop_rdma_cm       rping -C 10 -V and ib_send_bw -R through rdma_cm: our CM and the Linux
#                         kernel's (ib_cm, rdma_cm) set the connection up; each side as server
#   interop_counters      our icrc_errors 0 and icrc_ipv4_id_recovered > 0 (rxe's IDs verified),
#                         no "bad ICRC" from rxe in the kernel log, no rxe QP that gave up, our
#                         capture's every ICRC right for its recorded header (icrc_check.py)
#   interop_ipv6          the veth's ends also get fd14::1/64 (rxe1 lists it as a RoCE v2 GID)
#                         and fd14::2/64, where a second set's host runs (a host is of one IP
#                         version): the pingpongs and perftests above with rxe1's IPv6 GID, and
#                         rping by IPv6 address, each side as server; our icrc_errors and
#                         wrong_source 0, no "bad ICRC" from rxe, no rxe QP that gave up, every
#                         ICRC of our capture right (over IPv6 nothing is recovered: the check is
#                         whole)
# The captures go to $RDMAEMU_VM_OUT: our host's interop.pcap and interop6.pcap, the veth's
# veth.pcap and veth-lossy.pcap, for tshark on the host (run_checks.sh).

IOP_NS=rdmaemu-interop
IOP_RXE_IP=10.214.0.1
IOP_EMU_IP=10.214.0.2
IOP_RT=/tmp/rdmaemu-interop-hosts
IOP_PCAP=/tmp/rdmaemu-interop-pcap
IOP_DEV=rxe1
IOP_RXE_IP6=fd14::1
IOP_EMU_IP6=fd14::2
IOP_RT6=/tmp/rdmaemu-interop-hosts6
IOP_PCAP6=/tmp/rdmaemu-interop-pcap6
iop_ready=0
iop_gid=""
iop_port=19000

# ns_emu CMD...: CMD in our namespace with the interop set's runtime dir.
ns_emu() { ip netns exec "$IOP_NS" env RDMAEMU_RUNTIME_DIR="$IOP_RT" "$@"; }
iop_rdmaemu() { ns_emu "$B/bin/rdmaemu" "$@"; }

# The veth, rxe1 on its root end and the emulated host on the other, once. Returns 1 with the
# reason in the log.
iop_setup() {
    ((iop_ready)) && return 0
    logrun ip netns add "$IOP_NS" || return 1
    logrun ip link add vrxe type veth peer name vemu netns "$IOP_NS" || return 1
    logrun ip addr add "$IOP_RXE_IP/24" dev vrxe && logrun ip link set vrxe up || return 1
    ip -n "$IOP_NS" link set lo up
    logrun ip -n "$IOP_NS" addr add "$IOP_EMU_IP/24" dev vemu && logrun ip -n "$IOP_NS" link set vemu up || return 1
    logrun rdma link add "$IOP_DEV" type rxe netdev vrxe || return 1
    # rxe1's IPv4 GID: ::ffff:10.214.0.1, RoCE v2 (index 1 after the fe80:: one, usually).
    local i f
    for i in $(seq 100); do
        for f in /sys/class/infiniband/$IOP_DEV/ports/1/gids/*; do
            if [ "$(cat "$f" 2>/dev/null)" = "0000:0000:0000:0000:0000:ffff:0ad6:0001" ] &&
                [ "$(cat "/sys/class/infiniband/$IOP_DEV/ports/1/gid_attrs/types/${f##*/}" 2>/dev/null)" = "RoCE v2" ]; then
                iop_gid=${f##*/}; break 2
            fi
        done
        sleep 0.1
    done
    [ -n "$iop_gid" ] || { log "no RoCE v2 GID ::ffff:$IOP_RXE_IP on $IOP_DEV"; return 1; }
    logrun ibv_devinfo -d "$IOP_DEV" -v
    iop_up || return 1
    iop_ready=1
}

# The emulated host on 10.214.0.2, capturing; extra options (faults) as arguments.
iop_up() {
    rm -rf "$IOP_RT"; mkdir -m 700 -p "$IOP_RT" "$IOP_PCAP"
    logrun ip netns exec "$IOP_NS" env RDMAEMU_RUNTIME_DIR="$IOP_RT" "$B/bin/rdmaemu" up --hosts 1 \
        --address "$IOP_EMU_IP" --pcap "$IOP_PCAP" --pcap-limit 50000000 "$@"
}
iop_down() { iop_rdmaemu down >/dev/null 2>&1; }

# iop_log_pair LABEL WHAT: the last pair's commands, exits and outputs into the log.
iop_log_pair() {
    {
        echo "\$ $2: ${PAIR_SECS} s"
        echo "--- server (exit $PAIR_SRV_RC)"; cat "$work/$1.server"
        echo "--- client (exit $PAIR_CLI_RC)"; cat "$work/$1.client"
    } >>"$LOG"
}

# iop_pair LABEL SIDE TMO -- PROGRAM ARGS...: PROGRAM as server on SIDE (emu or rxe), client on
# the other, connecting to the server's address; each side with its device and GID options
# (ours: emu0, -g/-x 0; rxe1 with its IPv4 GID). Sets PAIR_SRV_RC PAIR_CLI_RC PAIR_SECS.
iop_pair() {
    local label=$1 side=$2 tmo=$3; shift 4
    local prog=$1; shift
    local gopt=-g
    [[ $prog == ib_* ]] && gopt=-x
    local emu=(ip netns exec "$IOP_NS" env RDMAEMU_RUNTIME_DIR="$IOP_RT" "$B/bin/rdmaemu" run --host 1 -- "$prog" "$gopt" 0 -p "$iop_port" "$@")
    local rxe=("$prog" -d "$IOP_DEV" "$gopt" "$iop_gid" -p "$iop_port" "$@")
    local srv cli addr t0; t0=$(now)
    if [ "$side" = emu ]; then srv=("${emu[@]}"); cli=("${rxe[@]}"); addr=$IOP_EMU_IP
    else srv=("${rxe[@]}"); cli=("${emu[@]}"); addr=$IOP_RXE_IP; fi
    timeout "$tmo" "${srv[@]}" >"$work/$label.server" 2>&1 &
    local sp=$! i
    for ((i = 0; i < 200; i++)); do
        if [ "$side" = emu ]; then ip netns exec "$IOP_NS" ss -ltn | grep -q ":$iop_port " && break
        else ss -ltn | grep -q ":$iop_port " && break; fi
        kill -0 $sp 2>/dev/null || break
        sleep 0.1
    done
    timeout "$tmo" "${cli[@]}" "$addr" >"$work/$label.client" 2>&1
    PAIR_CLI_RC=$?
    wait $sp
    PAIR_SRV_RC=$?
    PAIR_SECS=$(since "$t0")
    iop_log_pair "$label" "server on $side: ${srv[*]} / client: ${cli[*]} $addr"
    iop_port=$((iop_port + 1))
}

# iop_cm_pair LABEL SIDE -- PROGRAM ARGS...: an rdma_cm program as server on SIDE (emu or rxe)
# with ARGS and SERVER_ARGS, as client on the other with ARGS and CLIENT_ARGS (arrays the caller
# sets; ADDR in them is replaced by the server's address). rdma_cm picks the device by address.
iop_cm_pair() {
    local label=$1 side=$2; shift 3
    local emu=(ip netns exec "$IOP_NS" env RDMAEMU_RUNTIME_DIR="$IOP_RT" "$B/bin/rdmaemu" run --host 1 --)
    local addr=$IOP_EMU_IP srv_pre=("${emu[@]}") cli_pre=()
    if [ "$side" = rxe ]; then addr=$IOP_RXE_IP; srv_pre=(); cli_pre=("${emu[@]}"); fi
    local srv=("${SERVER_ARGS[@]//ADDR/$addr}") cli=("${CLIENT_ARGS[@]//ADDR/$addr}") t0
    t0=$(now)
    timeout 60 "${srv_pre[@]}" "$@" "${srv[@]}" >"$work/$label.server" 2>&1 &
    local sp=$!
    sleep 3 # the server's listen (no TCP port to watch)
    timeout 60 "${cli_pre[@]}" "$@" "${cli[@]}" >"$work/$label.client" 2>&1
    PAIR_CLI_RC=$?
    wait $sp
    PAIR_SRV_RC=$?
    PAIR_SECS=$(since "$t0")
    iop_log_pair "$label" "$label: server on $side: $* ${srv[*]} / client: $* ${cli[*]}"
}

check_interop_rdma_cm() {
    iop_setup || { result interop_rdma_cm FAIL "setup failed"; return; }
    local side notes=() label try
    for side in emu rxe; do
        label=interop_rping.$side
        SERVER_ARGS=(-s -a ADDR -p 7174 -C 10 -S 4096 -V -v)
        CLIENT_ARGS=(-c -a ADDR -p 7174 -C 10 -S 4096 -V -v)
        iop_cm_pair "$label" "$side" -- rping
        if [ "$PAIR_SRV_RC" -ne 0 ] || [ "$PAIR_CLI_RC" -ne 0 ] ||
            [ "$(grep -c '^ping data: rdma-ping-' "$work/$label.client")" -ne 10 ]; then
            result interop_rdma_cm FAIL "rping, server on $side: server $PAIR_SRV_RC, client $PAIR_CLI_RC: $(tail -3 "$work/$label.client" | tr '\n' ' ')"; return
        fi
        notes+=("rping/$side ${PAIR_SECS}s")
        # Up to three tries, as interop_perftest: perftest's clock calibration fails on a loaded
        # qemu ("Correlation coefficient r^2: ... < 0.9"), and then the server gives no report.
        for try in 1 2 3; do
            label=interop_send_bw_R.$side.$try
            SERVER_ARGS=(-R -n 200 -p $((19500 + try)))
            CLIENT_ARGS=(-R -n 200 -p $((19500 + try)) ADDR)
            iop_cm_pair "$label" "$side" -- ib_send_bw
            [ "$PAIR_SRV_RC" -eq 0 ] && [ "$PAIR_CLI_RC" -eq 0 ] && break
            # ... or perftest's own race (rdmacm_programs.sh): the client's REQ before the
            # server's second listener, rejected with reason 8.
            grep -qE "Correlation coefficient|Can't produce a report|RDMA_CM_EVENT_REJECTED; error: 8" "$work/$label.server" "$work/$label.client" || break
        done
        if [ "$PAIR_SRV_RC" -ne 0 ] || [ "$PAIR_CLI_RC" -ne 0 ] ||
            ! grep -qE '^[[:space:]]*[0-9]+[[:space:]]+200[[:space:]]+' "$work/$label.client"; then
            result interop_rdma_cm FAIL "ib_send_bw -R, server on $side: server $PAIR_SRV_RC, client $PAIR_CLI_RC: $(tail -3 "$work/$label.client" | tr '\n' ' ')"; return
        fi
        notes+=("ib_send_bw-R/$side ${PAIR_SECS}s")
    done
    result interop_rdma_cm PASS "emu0 <-> $IOP_DEV through both CMs, each side as server: ${notes[*]}"
}

# iop_pingpongs NAME ITERS PROGRAM ARGS...: both sides as server; FAIL and return 1 on the first
# pair that does not finish with the "iters in" line on both ends.
iop_pingpongs() {
    local name=$1 iters=$2; shift 2
    local side
    for side in emu rxe; do
        iop_pair "$name.$side" "$side" 120 -- "$@" -n "$iters"
        if ! pair_ok "$name.$side" "$iters"; then
            result "$name" FAIL "$* -n $iters, server on $side: $(pair_why "$name.$side")"; return 1
        fi
        IOP_NOTES+=("$1 ${*:2} ($side server) ${PAIR_SECS}s")
    done
}

# rxe1's counters into the log, to tell which check moved them.
iop_rxe_stats() { log "--- rxe1 counters $1:"; rdma statistic show link "$IOP_DEV/1" >>"$LOG" 2>&1; }

# The pingpongs of interop_rc_pingpong and interop_ud_srq, as check NAME (interop_ipv6 runs them
# too); each returns 1 after the failing pair's FAIL.
iop_rc_pingpongs() {
    iop_pingpongs "$1" 100 ibv_rc_pingpong -s 1 --chk &&
        iop_pingpongs "$1" 100 ibv_rc_pingpong -s 4096 --chk &&
        iop_pingpongs "$1" 100 ibv_rc_pingpong -s 4096 -e --chk &&
        iop_pingpongs "$1" 50 ibv_rc_pingpong -s 65536 --chk &&
        iop_pingpongs "$1" 10 ibv_rc_pingpong -s 1048576 --chk
}
iop_ud_srq_pingpongs() {
    iop_pingpongs "$1" 100 ibv_ud_pingpong -s 1024 --chk &&
        iop_pingpongs "$1" 100 ibv_srq_pingpong -s 4096 --chk
}

check_interop_rc_pingpong() {
    iop_rxe_stats "before"
    iop_setup || { result interop_rc_pingpong FAIL "setup failed: $(tail -3 "$LOG" | tr '\n' ' ')"; return; }
    IOP_NOTES=()
    iop_rc_pingpongs interop_rc_pingpong || return
    result interop_rc_pingpong PASS "emu0 <-> $IOP_DEV (GID $iop_gid), --chk: ${IOP_NOTES[*]}"
}

check_interop_ud_srq() {
    iop_rxe_stats "before"
    iop_setup || { result interop_ud_srq FAIL "setup failed"; return; }
    IOP_NOTES=()
    iop_ud_srq_pingpongs interop_ud_srq || return
    result interop_ud_srq PASS "emu0 <-> $IOP_DEV: ${IOP_NOTES[*]}"
}

# iop_perftest LABEL SIDE PROG ARGS...: a perftest pair, server on SIDE, up to three tries:
# perftest's clock calibration fails on a loaded qemu ("Correlation coefficient r^2: ... < 0.9"),
# and then the server gives no report. Returns 1 unless both ends finished with a result line
# (the reason in PAIR_WHY).
iop_perftest() {
    local label=$1 side=$2 prog=$3 try; shift 3
    for try in 1 2 3; do
        iop_pair "$label.$try" "$side" 120 -- "$prog" "$@"
        [ "$PAIR_SRV_RC" -eq 0 ] && [ "$PAIR_CLI_RC" -eq 0 ] && break
        grep -qE "Correlation coefficient|Can't produce a report" "$work/$label.$try.server" "$work/$label.$try.client" || break
    done
    PAIR_WHY=$(pair_why "$label.$try")
    [ "$PAIR_SRV_RC" -eq 0 ] && [ "$PAIR_CLI_RC" -eq 0 ] &&
        grep -qE '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+([0-9.]+|inf)' "$work/$label.$try.client"
}

# iop_perftests NAME "ARGS" PROG...: each PROG with ARGS, each side as server, as check NAME;
# returns 1 after the failing pair's FAIL.
iop_perftests() {
    local name=$1 prog side
    local -a args
    read -ra args <<<"$2"
    shift 2
    for prog in "$@"; do
        for side in emu rxe; do
            iop_perftest "${name}_$prog.$side" "$side" "$prog" "${args[@]}" ||
                { result "$name" FAIL "$prog ${args[*]}, server on $side: $PAIR_WHY"; return 1; }
            IOP_NOTES+=("$prog/$side ${PAIR_SECS}s")
        done
    done
}
IOP_PERFTESTS=(ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat)

check_interop_perftest() {
    iop_rxe_stats "before"
    iop_setup || { result interop_perftest FAIL "setup failed"; return; }
    IOP_NOTES=()
    iop_perftests interop_perftest "-n 200" "${IOP_PERFTESTS[@]}" || return
    result interop_perftest PASS "emu0 <-> $IOP_DEV, each side as server: ${IOP_NOTES[*]}"
}

# wire_start FILE IFACE: a capture of the RoCE v2 packets on our end of the veth (both
# directions, as they cross it) into $out/FILE, until wire_stop. Returns 1 when it cannot start.
wire_start() {
    rm -f "$work/wire.ready"
    ip netns exec "$IOP_NS" python3 "$here/wire_capture.py" "$2" "$out/$1" "$work/wire.ready" \
        >"$work/wire.out" 2>&1 &
    WIRE_PID=$!
    local i
    for ((i = 0; i < 100; i++)); do
        [ -e "$work/wire.ready" ] && return 0
        kill -0 "$WIRE_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$work/wire.out" >>"$LOG"
    return 1
}
wire_stop() {
    kill -TERM "$WIRE_PID" 2>/dev/null
    wait "$WIRE_PID"
    cat "$work/wire.out" >>"$LOG"
}

# What crossed the veth, captured on it (not what either end recorded): RC SENDs of 4 KiB and
# 64 KiB, UD datagrams, RDMA WRITEs and READs, each side as server. Every packet's ICRC is right
# for the header it had on the wire (rxe's with the IP IDs it chose, ours with ID 0), checked by
# icrc_check.py; interop_tshark decodes the file on the host.
check_interop_wire() {
    iop_setup || { result interop_wire FAIL "setup failed"; return; }
    wire_start veth.pcap vemu || { result interop_wire FAIL "wire_capture.py did not start on vemu"; return; }
    IOP_NOTES=()
    local ok=1
    iop_pingpongs interop_wire 20 ibv_rc_pingpong -s 4096 --chk &&
        iop_pingpongs interop_wire 5 ibv_rc_pingpong -s 65536 --chk &&
        iop_pingpongs interop_wire 20 ibv_ud_pingpong -s 1024 --chk &&
        iop_perftests interop_wire "-n 20 -s 65536" ib_write_bw ib_read_bw || ok=0
    wire_stop
    ((ok)) || return # the failing pair said why
    local icrc_check=$here/icrc_check.py
    [ -f "$icrc_check" ] || icrc_check=/rdmaemu-it/icrc_check.py
    local sides
    sides=$(python3 - "$out/veth.pcap" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
count = {}
off = 24
while off + 16 <= len(data):
    n = struct.unpack_from("<I", data, off + 8)[0]
    frame = data[off + 16:off + 16 + n]
    src = ".".join(str(b) for b in frame[26:30])
    count[src] = count.get(src, 0) + 1
    off += 16 + n
print(" ".join(f"{k}={v}" for k, v in sorted(count.items())))
PY
)
    log "packets on the veth per source: $sides"
    if ! grep -q "$IOP_RXE_IP=" <<<"$sides" || ! grep -q "$IOP_EMU_IP=" <<<"$sides"; then
        result interop_wire FAIL "the veth capture lacks one side: $sides"
    elif ! logrun python3 "$icrc_check" "$out/veth.pcap"; then
        result interop_wire FAIL "icrc_check.py: a packet's ICRC is wrong for the header it had on the wire (log)"
    else
        result interop_wire PASS "captured on the veth: $sides packets, every ICRC right for its header on the wire ($(grep -o 'the kernel dropped.*' "$work/wire.out")): ${IOP_NOTES[*]}"
    fi
}

# iop_rxe_request_loss on|off: 1% of the requests rxe sends on vrxe (BTH opcode below 0x0d: SEND,
# WRITE, READ request; IPv4 without options, so the opcode is byte 28) lost by netem, its ACKs and
# READ responses untouched: the recovery checked is each side's go-back-N after the other's NAK
# (loss of everything rxe sends was measured by hand, docs/interop.md).
iop_rxe_request_loss() {
    tc qdisc del dev vrxe root 2>/dev/null
    [ "$1" = on ] || return 0
    logrun tc qdisc add dev vrxe root handle 1: prio &&
        logrun tc qdisc add dev vrxe parent 1:3 handle 30: netem loss 1% || return 1
    local opcodes
    for opcodes in "0x00 0xf8" "0x08 0xfc" "0x0c 0xff"; do
        logrun tc filter add dev vrxe parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff \
            match ip dport 4791 0xffff match u8 $opcodes at 28 flowid 1:3 || return 1
    done
}

check_interop_lossy() {
    iop_setup || { result interop_lossy FAIL "setup failed"; return; }
    iop_counters_before_loss
    iop_down
    iop_up --drop 0.01 --seed 16 || { result interop_lossy FAIL "rdmaemu up --drop 0.01 failed"; return; }
    # --drop loses packets we send: rxe NAKs the gaps and our go-back-N answers; netem loses rxe's
    # requests: we NAK and rxe resends.
    iop_rxe_request_loss on || { iop_rxe_request_loss off; result interop_lossy FAIL "tc could not set netem on vrxe (log)"; return; }
    IOP_NOTES=()
    # The veth capture shows both recoveries as they happen (docs/interop.md's timings).
    wire_start veth-lossy.pcap vemu || { iop_rxe_request_loss off; result interop_lossy FAIL "wire_capture.py did not start on vemu"; return; }
    local ok=1
    # perftest, not ibv_rc_pingpong: a pingpong's side that finishes first destroys its QP, and
    # when its ACK of the peer's last message is lost the peer retries into nothing (rxe forever,
    # ours until retry_cnt): a hang in 1 of 3 and 1 of 2 runs under loss. perftest meets over TCP
    # after its last completion, before either side destroys a QP.
    iop_perftests interop_lossy "-n 100 -s 65536" ib_write_bw ib_read_bw || ok=0
    wire_stop
    log "--- netem on vrxe:"; tc -s qdisc show dev vrxe >>"$LOG" 2>&1
    iop_rxe_request_loss off
    ((ok)) || return
    iop_rdmaemu status --json >"$work/interop.lossy.json"
    local drops naks
    drops=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][0]["counters"]["fault_drops"])' "$work/interop.lossy.json")
    log "--- rxe1 after the lossy runs:"; logrun rdma statistic show link "$IOP_DEV/1"
    naks=$(iop_naks "$out/veth-lossy.pcap")
    log "NAKs (PSN sequence error) on the veth per sender: $naks"
    read -r nak_rxe nak_emu <<<"$naks"
    if ((drops == 0)); then result interop_lossy FAIL "--drop 0.01 dropped nothing"
    elif ((nak_rxe == 0)); then result interop_lossy FAIL "rxe sent no NAK for a sequence gap"
    elif ((nak_emu == 0)); then result interop_lossy FAIL "we sent no NAK for a gap in rxe's requests (netem on vrxe)"
    else
        result interop_lossy PASS "$drops of our packets dropped (--drop), 1% of rxe's requests (netem): rxe NAKed the gaps $nak_rxe times and we $nak_emu times, each side's go-back-N answered: ${IOP_NOTES[*]}"
    fi
}

# iop_naks PCAP: "RXE OURS", the NAKs (PSN sequence error, AETH syndrome 0x60) each side sent in
# a capture of the veth.
iop_naks() {
    python3 - "$1" "$IOP_RXE_IP" "$IOP_EMU_IP" <<'PY'
import socket, struct, sys
data = open(sys.argv[1], "rb").read()
naks = {sys.argv[2]: 0, sys.argv[3]: 0}
off = 24
while off + 16 <= len(data):
    n = struct.unpack_from("<I", data, off + 8)[0]
    f = data[off + 16:off + 16 + n]
    off += 16 + n
    if len(f) < 14 + 20 + 8 + 16 or f[12:14] != b"\x08\x00":
        continue
    bth = 14 + (f[14] & 0x0F) * 4 + 8
    if f[bth] == 0x11 and f[bth + 12] == 0x60:  # ACKNOWLEDGE, AETH syndrome NAK PSN sequence error
        src = socket.inet_ntoa(f[26:30])
        naks[src] = naks.get(src, 0) + 1
print(naks[sys.argv[2]], naks[sys.argv[3]])
PY
}

# Our counters and rxe's after the clean checks (before the lossy one restarts the host).
iop_counters_before_loss() {
    iop_rdmaemu status --json >"$work/interop.status.json"
    iop_rdmaemu status >>"$LOG" 2>&1
    rdma statistic show link "$IOP_DEV/1" >"$work/interop.rxe.stats" 2>&1
    cat "$work/interop.rxe.stats" >>"$LOG"
    cp "$IOP_PCAP/host1.pcap" "$out/interop.pcap" 2>/dev/null
    cp "$IOP_RT/host1/nicsimd.log" "$out/interop-nicsimd.log" 2>/dev/null
}

check_interop_counters() {
    [ -s "$work/interop.status.json" ] || iop_counters_before_loss
    local c
    c=$(python3 -c '
import json, sys
h = json.load(open(sys.argv[1]))["hosts"][0]
c = h["counters"]
print(c["icrc_errors"], c["icrc_ipv4_id_recovered"], c["rx_packets"], c["wrong_source"], h.get("icrc_ipv4", "?"))
' "$work/interop.status.json")
    read -r icrc recovered rx wrong policy <<<"$c"
    log "our host: icrc_errors=$icrc icrc_ipv4_id_recovered=$recovered rx_packets=$rx wrong_source=$wrong policy=$policy"
    # rxe drops a packet with a bad ICRC before it counts it, saying "bad ICRC from <addr>" in
    # the kernel log (rxe_recv.c / rxe_icrc.c, pr_warn_ratelimited): none may be there. Of its
    # counters (rxe_hw_counters.c) only a QP that gave up is an error; the sequence and retry
    # counters are recovery from packets the VM's kernel lost in bursts (veth backlog, socket
    # buffers: logged below), which the transport is there to survive.
    local bad icrc_warn recovery
    icrc_warn=$(dmesg 2>/dev/null | grep -c 'bad ICRC')
    dmesg 2>/dev/null | grep -i 'rxe\|rdma' | tail -20 >>"$LOG"
    bad=$(tr ' ' '\n' <"$work/interop.rxe.stats" | paste - - 2>/dev/null |
        awk '$1 ~ /^(retry_exceeded_err|retry_rnr_exceeded_err)$/ && $2 != 0 {printf "%s=%s ", $1, $2}')
    recovery=$(tr ' ' '\n' <"$work/interop.rxe.stats" | paste - - 2>/dev/null |
        awk '$1 ~ /^(duplicate_request|out_of_seq_request|rcvd_seq_err|completer_retry_err|send_err)$/ {printf "%s=%s ", $1, $2}')
    log "--- the VM kernel's drops: /proc/net/softnet_stat (2nd column), UDP RcvbufErrors"
    cat /proc/net/softnet_stat >>"$LOG"; grep '^Udp:' /proc/net/snmp >>"$LOG"
    ip -s link show vrxe >>"$LOG" 2>&1
    local icrc_check=$here/icrc_check.py
    [ -f "$icrc_check" ] || icrc_check=/rdmaemu-it/icrc_check.py
    local cap="capture not checked"
    if [ -f "$icrc_check" ] && [ -s "$out/interop.pcap" ]; then
        if logrun python3 "$icrc_check" "$out/interop.pcap"; then cap="every captured ICRC right for its recorded header"
        else result interop_counters FAIL "icrc_check.py: a captured packet's ICRC is wrong for the header the capture recorded"; return; fi
    fi
    if ((icrc != 0)); then result interop_counters FAIL "icrc_errors=$icrc for rxe's traffic"
    elif ((recovered == 0)); then result interop_counters FAIL "no rxe packet needed its IP ID recovered: did rxe send any?"
    elif ((wrong != 0)); then result interop_counters FAIL "wrong_source=$wrong: rxe's packets taken for someone else's"
    elif ((icrc_warn != 0)); then result interop_counters FAIL "rxe logged $icrc_warn 'bad ICRC' for our packets"
    elif [ -n "$bad" ]; then result interop_counters FAIL "rxe's QPs gave up: $bad"
    else result interop_counters PASS "icrc_errors=0, $recovered of $rx rxe packets verified with their IP ID recovered (policy $policy); rxe: no 'bad ICRC', no QP gave up (recovery: $recovery); $cap"
    fi
}

# rxe1's GID index whose GID is $1 (sysfs's form) and type RoCE v2, waiting up to 10 s for the
# kernel to list it (roce_gid_mgmt adds one per address of the netdev); empty when none comes.
iop_find_gid() {
    local want=$1 i f
    for i in $(seq 100); do
        for f in /sys/class/infiniband/$IOP_DEV/ports/1/gids/*; do
            if [ "$(cat "$f" 2>/dev/null)" = "$want" ] &&
                [ "$(cat "/sys/class/infiniband/$IOP_DEV/ports/1/gid_attrs/types/${f##*/}" 2>/dev/null)" = "RoCE v2" ]; then
                echo "${f##*/}"; return
            fi
        done
        sleep 0.1
    done
}

check_interop_ipv6() {
    iop_setup || { result interop_ipv6 FAIL "setup failed"; return; }
    logrun ip -6 addr add "$IOP_RXE_IP6/64" dev vrxe nodad &&
        logrun ip -n "$IOP_NS" -6 addr add "$IOP_EMU_IP6/64" dev vemu nodad ||
        { result interop_ipv6 FAIL "cannot give the veth IPv6 addresses (IPv6 off in the VM?)"; return; }
    local gid6
    gid6=$(iop_find_gid "fd14:0000:0000:0000:0000:0000:0000:0001")
    [ -n "$gid6" ] || { result interop_ipv6 FAIL "$IOP_DEV lists no RoCE v2 GID for $IOP_RXE_IP6"; return; }
    logrun ibv_devinfo -d "$IOP_DEV" -v
    rm -rf "$IOP_RT6" "$IOP_PCAP6"; mkdir -m 700 -p "$IOP_RT6"
    logrun ip netns exec "$IOP_NS" env RDMAEMU_RUNTIME_DIR="$IOP_RT6" "$B/bin/rdmaemu" up --hosts 1 \
        --address "$IOP_EMU_IP6" --pcap "$IOP_PCAP6" --pcap-limit 50000000 ||
        { result interop_ipv6 FAIL "rdmaemu up --address $IOP_EMU_IP6 failed"; return; }
    local icrc_warn_before
    icrc_warn_before=$(dmesg 2>/dev/null | grep -c 'bad ICRC')
    iop_rxe_stats "before the IPv6 runs"
    # The pairs as the IPv4 ones, on the IPv6 set and with rxe1's IPv6 GID; the programs' TCP
    # side channels still go by IPv4 (their servers listen on 0.0.0.0).
    local rt4=$IOP_RT gid4=$iop_gid
    IOP_RT=$IOP_RT6 iop_gid=$gid6
    IOP_NOTES=()
    local ok=1
    iop_rc_pingpongs interop_ipv6 && iop_ud_srq_pingpongs interop_ipv6 && iop_perftests interop_ipv6 "-n 200" "${IOP_PERFTESTS[@]}" || ok=0
    # rdma_cm by IPv6 address, our CM and the kernel's: rping each side as server.
    local side label
    for side in emu rxe; do
        ((ok)) || break
        label=interop_rping6.$side
        SERVER_ARGS=(-s -a ADDR -p 7176 -C 10 -S 4096 -V -v)
        CLIENT_ARGS=(-c -a ADDR -p 7176 -C 10 -S 4096 -V -v)
        IOP_EMU_IP=$IOP_EMU_IP6 IOP_RXE_IP=$IOP_RXE_IP6 iop_cm_pair "$label" "$side" -- rping
        if [ "$PAIR_SRV_RC" -ne 0 ] || [ "$PAIR_CLI_RC" -ne 0 ] ||
            [ "$(grep -c '^ping data: rdma-ping-' "$work/$label.client")" -ne 10 ]; then
            result interop_ipv6 FAIL "rping -a <IPv6>, server on $side: server $PAIR_SRV_RC, client $PAIR_CLI_RC: $(tail -3 "$work/$label.client" | tr '\n' ' ')"
            ok=0
        else
            IOP_NOTES+=("rping/$side ${PAIR_SECS}s")
        fi
    done
    iop_rdmaemu status --json >"$work/interop6.status.json"
    iop_rdmaemu status >>"$LOG" 2>&1
    iop_rdmaemu down >/dev/null 2>&1
    IOP_RT=$rt4 iop_gid=$gid4
    ((ok)) || return # iop_pingpongs said why
    cp "$IOP_PCAP6/host1.pcap" "$out/interop6.pcap" 2>/dev/null
    rdma statistic show link "$IOP_DEV/1" >"$work/interop6.rxe.stats" 2>&1
    cat "$work/interop6.rxe.stats" >>"$LOG"
    local c icrc wrong rx
    c=$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["hosts"][0]["counters"]
print(c["icrc_errors"], c["wrong_source"], c["rx_packets"])
' "$work/interop6.status.json")
    read -r icrc wrong rx <<<"$c"
    log "our IPv6 host: icrc_errors=$icrc wrong_source=$wrong rx_packets=$rx"
    local icrc_warn bad
    icrc_warn=$(($(dmesg 2>/dev/null | grep -c 'bad ICRC') - icrc_warn_before))
    bad=$(tr ' ' '\n' <"$work/interop6.rxe.stats" | paste - - 2>/dev/null |
        awk '$1 ~ /^(retry_exceeded_err|retry_rnr_exceeded_err)$/ && $2 != 0 {printf "%s=%s ", $1, $2}')
    local icrc_check=$here/icrc_check.py
    [ -f "$icrc_check" ] || icrc_check=/rdmaemu-it/icrc_check.py
    if [ ! -s "$out/interop6.pcap" ]; then result interop_ipv6 FAIL "no IPv6 capture"
    elif ! logrun python3 "$icrc_check" "$out/interop6.pcap"; then
        result interop_ipv6 FAIL "icrc_check.py: a captured IPv6 packet's ICRC is wrong"
    elif ((icrc != 0)); then result interop_ipv6 FAIL "icrc_errors=$icrc for rxe's IPv6 traffic"
    elif ((wrong != 0)); then result interop_ipv6 FAIL "wrong_source=$wrong"
    elif ((rx < 100)); then result interop_ipv6 FAIL "only $rx packets from rxe"
    elif ((icrc_warn != 0)); then result interop_ipv6 FAIL "rxe logged $icrc_warn 'bad ICRC' for our IPv6 packets"
    elif [ -n "$bad" ]; then result interop_ipv6 FAIL "rxe's QPs gave up: $bad"
    else
        result interop_ipv6 PASS "emu0 on $IOP_EMU_IP6 <-> $IOP_DEV GID $gid6 ($IOP_RXE_IP6): ${IOP_NOTES[*]}; icrc_errors=0 of $rx, rxe: no 'bad ICRC', no QP gave up; every captured ICRC right"
    fi
}
