#!/usr/bin/env bash
# checks.sh: the VM tests' payload, run as root inside the rdmaemu VM (tools/vm/rxe-vm) on Linux
# Soft-RoCE's rxe0. One boot runs every check; each prints one line
#   VMCHECK <name> PASS|FAIL <summary>
# (also to $RDMAEMU_VM_OUT/results.txt) and keeps its log in $RDMAEMU_VM_OUT/<name>.log.
#
# usage: checks.sh BUILD_DIR [CHECK...]      (in the guest; BUILD_DIR shared at the same path)
#        checks.sh --baseline                (everything without our library, for the figures)
# Checks (default: all, in this order):
#   hw_devices hw_devinfo hw_rc_pingpong hw_ib_write_bw hw_ib_read_lat hw_ib_send_bw
#   mixed_devices mixed_rc_pingpong_rxe0 mixed_rc_pingpong_emu0 trace_rc_pingpong hw_suite
#   interop_rc_pingpong interop_ud_srq interop_perftest interop_rdma_cm interop_wire interop_counters
#   interop_lossy interop_ipv6
# hw_*: through our library with RDMAEMU_MODE=hardware, compared with the same program without
# it; mixed_*: RDMAEMU_MODE=mixed with an emulated host up (rdmaemu up --hosts 1);
# trace_*: the same ibv_rc_pingpong on emu0 (emulated) and on rxe0 (hardware), RDMAEMU_TRACE of
# each side compared with `rdmaemu trace-compare`; interop_*: an emulated host and Soft-RoCE
# (rxe1 on a veth) talking RoCE v2 to each other (interop.sh).
# Exit status: 0 when every check passed, 1 otherwise.
set -uo pipefail

here=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
# rxe-vm runs a copy of this script; its helpers come from the tests/vm share (run_checks.sh).
[ -f "$here/suite_outcomes.py" ] || here=/rdmaemu-tests
out=${RDMAEMU_VM_OUT:-/tmp/vmchecks}
mkdir -p "$out"
work=/tmp/vmchecks.work
rm -rf "$work"; mkdir -p "$work"

baseline=0
B=""
if [[ ${1:-} == --baseline ]]; then
    baseline=1; shift
else
    B=${1:?usage: checks.sh BUILD_DIR [CHECK...]}; shift
fi
all=(hw_devices hw_devinfo hw_rc_pingpong hw_ib_write_bw hw_ib_read_lat hw_ib_send_bw
     mixed_devices mixed_rc_pingpong_rxe0 mixed_rc_pingpong_emu0 trace_rc_pingpong hw_suite
     interop_rc_pingpong interop_ud_srq interop_perftest interop_rdma_cm interop_wire
     interop_counters interop_lossy interop_ipv6)
checks=("$@")
((${#checks[@]})) || checks=("${all[@]}")

DEV=rxe0
GID=1 # rxe's GID 1 is the IPv4-mapped one (::ffff:10.0.2.15); 0 (fe80::) works as well
export RDMAEMU_RUNTIME_DIR=/tmp/rdmaemu-vm-hosts
failed=0
LOG=/dev/null

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
log() { echo "$*" >>"$LOG"; }
# Runs CMD, its output into the check's log under a header.
logrun() {
    echo "\$ $*" >>"$LOG"
    "$@" >>"$LOG" 2>&1
    local rc=$?
    echo "[exit $rc]" >>"$LOG"
    return $rc
}

# prefix WRAPPER: sets PFX, the command prefix that runs a program
#   hw     through our library in hardware mode (nothing in --baseline)
#   mixed  through our library in mixed mode on emulated host 1 (rdmaemu run)
#   emu    through our library in emulated mode on emulated host 1
#   plain  the system library
prefix() {
    case $1 in
        hw) PFX=(env "LD_LIBRARY_PATH=$B/lib" RDMAEMU_MODE=hardware); ((baseline)) && PFX=() ;;
        mixed) PFX=(env RDMAEMU_MODE=mixed "$B/bin/rdmaemu" run --host 1 --) ;;
        emu) PFX=(env RDMAEMU_MODE=emulated "$B/bin/rdmaemu" run --host 1 --) ;;
        plain) PFX=() ;;
    esac
}
hw() { local PFX; prefix hw; "${PFX[@]}" "$@"; }
mixed() { local PFX; prefix mixed; "${PFX[@]}" "$@"; }

result() { # name PASS|FAIL summary...
    local name=$1 verdict=$2; shift 2
    local line="VMCHECK $name $verdict $*"
    echo "$line" | tee -a "$out/results.txt"
    [[ $verdict == PASS ]] || failed=1
}

# listening PORT PID: something listens on TCP PORT here, or in the network namespace of PID or
# of a child of it (`timeout rdmaemu run ...`: programs under rdmaemu run are in their set's
# namespace, where ss(8) run here does not look).
listening() {
    ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
    local hex p
    hex=$(printf ':%04X' "$1")
    for p in "$2" $(pgrep -P "$2" 2>/dev/null); do
        awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 }
            END { exit !found }' "/proc/$p/net/tcp" "/proc/$p/net/tcp6" 2>/dev/null && return 0
    done
    return 1
}

# pair LABEL TIMEOUT WRAPPER -- PROGRAM ARGS...: server (PROGRAM ARGS) and client
# (PROGRAM ARGS 127.0.0.1) through WRAPPER (hw, mixed, emu or plain), both in the background;
# sets PAIR_SRV_RC PAIR_CLI_RC PAIR_SECS; outputs in $work/LABEL.{server,client}.
pair() {
    local label=$1 tmo=$2 wrap=$3; shift 4
    local t0 PFX; t0=$(now)
    prefix "$wrap"
    timeout "$tmo" "${PFX[@]}" "$@" >"$work/$label.server" 2>&1 &
    local sp=$!
    # The server listens on its TCP port once it has its QP; wait for that (not for a fixed time).
    local port="" i
    for ((i = 0; i + 1 < $#; i++)); do
        [[ ${@:i+1:1} == -p ]] && port=${@:i+2:1}
    done
    for ((i = 0; i < 200; i++)); do
        [ -n "$port" ] && listening "$port" "$sp" && break
        kill -0 $sp 2>/dev/null || break
        sleep 0.1
    done
    timeout "$tmo" "${PFX[@]}" "$@" 127.0.0.1 >"$work/$label.client" 2>&1
    PAIR_CLI_RC=$?
    wait $sp
    PAIR_SRV_RC=$?
    PAIR_SECS=$(since "$t0")
    {
        echo "\$ ${PFX[*]} $* (server) / ... 127.0.0.1 (client): ${PAIR_SECS} s"
        echo "--- server (exit $PAIR_SRV_RC)"; cat "$work/$label.server"
        echo "--- client (exit $PAIR_CLI_RC)"; cat "$work/$label.client"
    } >>"$LOG"
}


# --- the checks ----------------------------------------------------------------------------

check_hw_devices() {
    local ours sys
    sys=$(ibv_devices 2>&1)
    ours=$(hw ibv_devices 2>&1)
    log "--- ibv_devices without our library"; log "$sys"
    log "--- with it (hardware mode)"; log "$ours"
    if ! grep -qw "$DEV" <<<"$ours"; then
        result hw_devices FAIL "ibv_devices through our library (RDMAEMU_MODE=hardware) does not list $DEV"; return
    fi
    if grep -qw emu0 <<<"$ours"; then
        result hw_devices FAIL "hardware mode lists emu0"; return
    fi
    if [ "$ours" != "$sys" ]; then
        result hw_devices FAIL "ibv_devices output differs from the system library's: $(diff <(echo "$sys") <(echo "$ours") | grep '^[<>]' | head -3 | tr '\n' ' ')"; return
    fi
    result hw_devices PASS "ibv_devices lists $DEV, output identical"
}

check_hw_devinfo() {
    local args bad=()
    for args in "" "-v" "-d $DEV" "-d $DEV -v" "-l"; do
        local sys ours
        sys=$(ibv_devinfo $args 2>&1); local src=$?
        ours=$(hw ibv_devinfo $args 2>&1); local orc=$?
        log "=== ibv_devinfo $args: system exit $src, ours exit $orc, $(wc -l <<<"$sys") / $(wc -l <<<"$ours") lines"
        if [ "$sys" != "$ours" ] || [ $src -ne $orc ]; then
            bad+=("'ibv_devinfo $args'")
            log "--- diff (< system, > ours)"
            diff <(echo "$sys") <(echo "$ours") >>"$LOG"
        fi
    done
    if ((!baseline)); then
        # Identical output proves nothing if our library was not in the process: its trace must
        # have the verbs.
        RDMAEMU_TRACE=$work/devinfo.trace hw ibv_devinfo -v >/dev/null 2>&1
        log "--- RDMAEMU_TRACE of ibv_devinfo -v through our library: $(grep -c ' verb ' "$work/devinfo.trace" 2>/dev/null) verbs"
        if ! grep -q ' verb ' "$work/devinfo.trace" 2>/dev/null; then
            result hw_devinfo FAIL "ibv_devinfo with LD_LIBRARY_PATH=$B/lib RDMAEMU_MODE=hardware wrote no verbs trace: is our library loaded?"; return
        fi
    fi
    if ((${#bad[@]})); then
        result hw_devinfo FAIL "output differs from the system library's for ${bad[*]}: $(grep -m3 '^[<>]' "$LOG" | tr '\n' ' ')"
    else
        result hw_devinfo PASS "ibv_devinfo, -v, -d $DEV, -d $DEV -v, -l: identical to the system library's output"
    fi
}

# rc_pingpong_ok LABEL: both ends exited 0 and printed the "iters in" line.
pair_ok() {
    local label=$1 iters=$2
    [ "$PAIR_SRV_RC" -eq 0 ] && [ "$PAIR_CLI_RC" -eq 0 ] \
        && grep -qE "^$iters iters in [0-9.]+ seconds" "$work/$label.server" \
        && grep -qE "^$iters iters in [0-9.]+ seconds" "$work/$label.client"
}

pair_why() {
    local label=$1
    echo "server exit $PAIR_SRV_RC, client exit $PAIR_CLI_RC; server: $(tail -2 "$work/$label.server" | tr '\n' ' ')| client: $(tail -2 "$work/$label.client" | tr '\n' ' ')"
}

check_hw_rc_pingpong() {
    local port=18600 label variants=("" "-e" "-s 65536 -n 200" "-g 0") v notes=()
    for v in "${variants[@]}"; do
        label=hw_pp$port
        local iters=1000
        [[ $v == *-n\ 200* ]] && iters=200
        local g=$GID
        [[ $v == *-g* ]] && g=""
        local tr=()
        ((baseline)) || tr=(env "RDMAEMU_TRACE=$work/$label.%p.trace")
        pair "$label" 120 hw -- "${tr[@]}" ibv_rc_pingpong -d $DEV ${g:+-g $g} $v -p $port
        if ! pair_ok "$label" $iters; then
            result hw_rc_pingpong FAIL "ibv_rc_pingpong -d $DEV ${g:+-g $g} $v: $(pair_why "$label")"; return
        fi
        if ((!baseline)) && [ "$(cat "$work/$label".*.trace 2>/dev/null | grep -c ' verb ')" -eq 0 ]; then
            result hw_rc_pingpong FAIL "ibv_rc_pingpong ran, but not through our library (no verbs in its RDMAEMU_TRACE)"; return
        fi
        notes+=("'${v:-default}' ${PAIR_SECS}s")
        port=$((port + 1))
    done
    result hw_rc_pingpong PASS "ibv_rc_pingpong -d $DEV -g $GID server/client: ${notes[*]}; $(grep -E 'iters in' "$work/hw_pp18600.client")"
}

# perftest measures the CPU clock against gettimeofday for a second before it reports; under
# qemu's TCG on a loaded host that fit can fail ("Correlation coefficient r^2: ... < 0.9"), the
# client then says "Can't produce a report" and exits 1, or prints "inf". That is the VM's clock,
# not the verbs: such a run is repeated (3 tries), and an "inf" row counts as a result.
check_perftest() { # name program args...
    local name=$1 prog=$2; shift 2
    local port=$((18700 + RANDOM % 200)) label=$name try clock=""
    for try in 1 2 3; do
        pair "$label" 180 hw -- $prog -d $DEV -x $GID "$@" -p $port
        port=$((port + 1))
        if grep -qE "Correlation coefficient|Can't produce a report" "$work/$label.server" "$work/$label.client"; then
            clock=" (perftest's clock fit failed in $try run(s): the VM's timing)"
            [ "$PAIR_SRV_RC" -ne 0 ] || [ "$PAIR_CLI_RC" -ne 0 ] && { log "--- clock fit failed: again"; continue; }
        fi
        break
    done
    if [ "$PAIR_SRV_RC" -ne 0 ] || [ "$PAIR_CLI_RC" -ne 0 ]; then
        result "$name" FAIL "$prog -d $DEV -x $GID $*: $(pair_why "$label")$clock"; return
    fi
    # The result row: bytes and iterations first, then figures (inf when the clock fit failed).
    local row; row=$(grep -E '^ *[0-9]+ +[0-9]+ +([0-9.]+|inf)' "$work/$label.client" | tail -1 | tr -s ' \t' ' ')
    if [ -z "$row" ]; then
        result "$name" FAIL "$prog -d $DEV -x $GID $*: both ends exited 0, but the client printed no result row"; return
    fi
    result "$name" PASS "$prog -d $DEV -x $GID $* (${PAIR_SECS}s):$row$clock"
}
check_hw_ib_write_bw() { check_perftest hw_ib_write_bw ib_write_bw -n 200; }
check_hw_ib_read_lat() { check_perftest hw_ib_read_lat ib_read_lat -n 200; }
check_hw_ib_send_bw() { check_perftest hw_ib_send_bw ib_send_bw -n 200; }

# Soft-RoCE's kernel socket holds UDP port 4791 on every address of the VM's network namespace
# (0.0.0.0:4791), and nicsimd binds 127.0.S.N:4791 by default, so a plain `rdmaemu up` fails
# there ("UDP port 4791 is taken on every 127.0.S.1"). The check tries it (its failure stays in
# the log), then `rdmaemu up --udp-port 4792` (libraries from 077e270 on); with a library
# without that option, a network namespace of the daemons' own (unshare -n): programs talk to
# them through unix sockets in the runtime dir, so they still run beside rxe0.
hosts_up=0
EMU_NOTE=""
emu_up() {
    ((hosts_up)) && return 0
    if logrun "$B/bin/rdmaemu" up --hosts 1; then
        hosts_up=1; return 0
    fi
    grep -q 'UDP port 4791 is taken' "$LOG" || return 1
    if "$B/bin/rdmaemu" up --help 2>&1 | grep -q -- '--udp-port'; then
        log "--- rxe0 holds UDP 4791: the emulated host on UDP port 4792"
        logrun "$B/bin/rdmaemu" up --hosts 1 --udp-port 4792 || return 1
        EMU_NOTE=" [rdmaemu up --udp-port 4792: rxe holds UDP 4791]"
    else
        log "--- rxe0 holds UDP 4791 and rdmaemu up has no --udp-port: the emulated host in a network namespace of its own"
        logrun unshare -n sh -c "ip link set lo up && exec '$B/bin/rdmaemu' up --hosts 1" || return 1
        EMU_NOTE=" [nicsimd in its own netns: rxe holds UDP 4791]"
    fi
    hosts_up=1
}
emu_down() {
    ((hosts_up)) && "$B/bin/rdmaemu" down >/dev/null 2>&1
    hosts_up=0
}

check_mixed_devices() {
    if ! emu_up; then result mixed_devices FAIL "rdmaemu up --hosts 1 failed in the VM: $(tail -3 "$LOG" | tr '\n' ' ')"; return; fi
    local d v
    d=$(mixed ibv_devices 2>&1); log "\$ RDMAEMU_MODE=mixed rdmaemu run --host 1 -- ibv_devices"; log "$d"
    v=$(mixed ibv_devinfo 2>&1); log "\$ RDMAEMU_MODE=mixed rdmaemu run --host 1 -- ibv_devinfo"; log "$v"
    local miss=()
    for dev in emu0 $DEV; do
        grep -qw "$dev" <<<"$d" || miss+=("ibv_devices: no $dev")
        grep -qE "hca_id:\s+$dev\$" <<<"$v" || miss+=("ibv_devinfo: no hca_id $dev")
    done
    if ((${#miss[@]})); then
        result mixed_devices FAIL "${miss[*]}; ibv_devices printed: $(tr '\n' ' ' <<<"$d" | tr -s ' \t' ' ')"
    else
        result mixed_devices PASS "ibv_devices and ibv_devinfo list emu0 and $DEV ($(grep -E 'hca_id' <<<"$v" | awk '{print $2}' | paste -sd' ' -))$EMU_NOTE"
    fi
}

check_mixed_pp() { # name dev gid port
    local name=$1 dev=$2 g=$3 port=$4
    if ! emu_up; then result "$name" FAIL "rdmaemu up --hosts 1 failed in the VM"; return; fi
    pair "$name" 120 mixed -- ibv_rc_pingpong -d "$dev" -g "$g" -n 200 -p "$port"
    if pair_ok "$name" 200; then
        result "$name" PASS "RDMAEMU_MODE=mixed rdmaemu run --host 1 -- ibv_rc_pingpong -d $dev -g $g -n 200 (${PAIR_SECS}s): $(grep -E 'iters in' "$work/$name.client")"
    else
        result "$name" FAIL "RDMAEMU_MODE=mixed ibv_rc_pingpong -d $dev -g $g: $(pair_why "$name")"
    fi
}
check_mixed_rc_pingpong_rxe0() { check_mixed_pp mixed_rc_pingpong_rxe0 $DEV $GID 18800; }
check_mixed_rc_pingpong_emu0() { check_mixed_pp mixed_rc_pingpong_emu0 emu0 0 18801; }

# The same ibv_rc_pingpong on emu0 (emulated mode, rdmaemu run) and on rxe0 (hardware mode); the
# server's traces and the client's traces compared pairwise.
check_trace_rc_pingpong() {
    if ! emu_up; then result trace_rc_pingpong FAIL "rdmaemu up --hosts 1 failed in the VM"; return; fi
    local args=(-g 0 -n 20 -s 4096) side d rc
    mkdir -p "$work/tr.emu" "$work/tr.rxe"
    pair tr_emu 120 emu -- env "RDMAEMU_TRACE=$work/tr.emu/%p.trace" ibv_rc_pingpong -d emu0 "${args[@]}" -p 18810
    if ! pair_ok tr_emu 20; then result trace_rc_pingpong FAIL "on emu0: $(pair_why tr_emu)"; return; fi
    local emu_srv_pid emu_cli_pid
    pair tr_rxe 120 hw -- env "RDMAEMU_TRACE=$work/tr.rxe/%p.trace" ibv_rc_pingpong -d $DEV "${args[@]}" -p 18811
    if ! pair_ok tr_rxe 20; then result trace_rc_pingpong FAIL "on $DEV: $(pair_why tr_rxe)"; return; fi
    # Which trace is whose: the client's program line ends in 127.0.0.1.
    local f emu_srv="" emu_cli="" rxe_srv="" rxe_cli=""
    for d in emu rxe; do
        for f in "$work/tr.$d"/*.trace; do
            [ -e "$f" ] || continue
            if head -1 "$f" | grep -q '127\.0\.0\.1'; then eval "${d}_cli=\$f"; else eval "${d}_srv=\$f"; fi
        done
    done
    cp -r "$work/tr.emu" "$work/tr.rxe" "$out/" 2>/dev/null
    if [ -z "$emu_srv" ] || [ -z "$emu_cli" ] || [ -z "$rxe_srv" ] || [ -z "$rxe_cli" ]; then
        result trace_rc_pingpong FAIL "missing traces: emu0 server '${emu_srv##*/}' client '${emu_cli##*/}', $DEV server '${rxe_srv##*/}' client '${rxe_cli##*/}' (files: $(ls "$work"/tr.* | tr '\n' ' '))"; return
    fi
    # The traces must come from the backends meant: emulated for emu0, hardware for rxe0.
    if ! head -1 "$emu_srv" | grep -q 'mode emulated' || ! head -1 "$rxe_srv" | grep -q 'mode hardware'; then
        result trace_rc_pingpong FAIL "trace headers do not name the modes expected (emulated / hardware): '$(head -1 "$emu_srv")' / '$(head -1 "$rxe_srv")'"; return
    fi
    local bad=()
    for side in srv cli; do
        local a b
        eval "a=\$emu_$side b=\$rxe_$side"
        log "\$ rdmaemu trace-compare $a $b   # $side: emu0 vs $DEV"
        "$B/bin/rdmaemu" trace-compare "$a" "$b" >>"$LOG" 2>&1
        rc=$?
        log "[exit $rc]"
        ((rc == 0)) || bad+=("$side (exit $rc)")
    done
    log "--- emu0 server trace: $(grep -c . "$emu_srv") lines, $DEV server trace: $(grep -c . "$rxe_srv") lines"
    if ((${#bad[@]})); then
        result trace_rc_pingpong FAIL "rdmaemu trace-compare emu0 vs $DEV differs for ${bad[*]}: $(grep -v '^\$' "$LOG" | grep -m4 -iE 'differ|first|<|>|only|warning' | tr '\n' ' ')"
    else
        result trace_rc_pingpong PASS "ibv_rc_pingpong ${args[*]}: server and client traces on emu0 (emulated) and $DEV (hardware) match ($(grep -c ' verb ' "$rxe_srv") verbs, $(grep -c ' wr ' "$rxe_srv") WRs, $(grep -c ' wc ' "$rxe_srv") completions on the server)"
    fi
}

suite_prepare() {
    [ -d /tmp/rt/tests ] && return 0
    mkdir -p /tmp/rt && cp -r /usr/share/doc/rdma-core/tests /tmp/rt/tests && gunzip -f /tmp/rt/tests/*.gz
}
# suite_run TAG [WRAPPER]: the suite on $DEV; its log in $work/suite.TAG.log, outcomes (one
# "test-id outcome" per line) in $work/suite.TAG.outcomes.
suite_run() {
    local tag=$1 t0 PFX
    prefix "${2:-plain}"
    t0=$(now)
    (cd /tmp/rt && timeout 900 "${PFX[@]}" /usr/bin/python3 tests/run_tests.py --dev $DEV -v) >"$work/suite.$tag.log" 2>&1
    SUITE_RC=$?
    SUITE_SECS=$(since "$t0")
    python3 "$here/suite_outcomes.py" "$work/suite.$tag.log" >"$work/suite.$tag.outcomes"
    cp "$work/suite.$tag.log" "$out/"
}
counts() { awk '{print $2}' "$1" | sort | uniq -c | awk '{printf "%s%s %s", sep, $2, $1; sep=", "}'; }

check_hw_suite() {
    suite_prepare || { result hw_suite FAIL "cannot unpack rdma-core's tests from /usr/share/doc/rdma-core/tests"; return; }
    suite_run system
    local sys_rc=$SUITE_RC sys_secs=$SUITE_SECS
    log "=== without our library: exit $sys_rc, ${sys_secs} s: $(counts "$work/suite.system.outcomes"); $(grep -E '^Ran ' "$work/suite.system.log")"
    if ((baseline)); then
        result hw_suite PASS "baseline: $(counts "$work/suite.system.outcomes") (${sys_secs}s); $(grep -E '^(ERROR|FAIL):' "$work/suite.system.log" | tr '\n' ' ')"
        return
    fi
    # pyverbs must load our library (and through it rdma-core's), not the system one directly.
    local maps
    maps=$(hw /usr/bin/python3 -c 'import pyverbs.device as d; d.get_device_list(); print(open("/proc/self/maps").read())' 2>&1 | grep -F libibverbs | awk '{print $6}' | sort -u)
    log "--- libibverbs files mapped by python3 + pyverbs through our library:"; log "$maps"
    if ! grep -qxF "$(realpath "$B/lib/libibverbs.so.1")" <<<"$maps"; then
        result hw_suite FAIL "pyverbs with LD_LIBRARY_PATH=$B/lib does not load our library (mapped: $(echo $maps))"; return
    fi
    suite_run ours hw
    log "=== with our library (hardware mode): exit $SUITE_RC, ${SUITE_SECS} s: $(counts "$work/suite.ours.outcomes"); $(grep -E '^Ran ' "$work/suite.ours.log")"
    local n; n=$(wc -l <"$work/suite.ours.outcomes")
    log "--- per-test outcomes that differ (< system, > ours)"
    diff "$work/suite.system.outcomes" "$work/suite.ours.outcomes" >"$work/suite.diff"
    cat "$work/suite.diff" >>"$LOG"
    log "--- tests that are not ok with our library: tracebacks"
    awk '/^(ERROR|FAIL): /,/^-{60,}$/' "$work/suite.ours.log" >>"$LOG"
    if ((n < 100)); then
        result hw_suite FAIL "the suite with our library ran $n tests (exit $SUITE_RC): $(tail -3 "$work/suite.ours.log" | tr '\n' ' ')"
    elif [ -s "$work/suite.diff" ]; then
        result hw_suite FAIL "per-test outcomes differ ($(grep -c '^>' "$work/suite.diff") tests): system $(counts "$work/suite.system.outcomes") vs ours $(counts "$work/suite.ours.outcomes"); first: $(grep '^>' "$work/suite.diff" | head -4 | cut -c3- | tr '\n' ';')"
    else
        result hw_suite PASS "same per-test outcomes with and without our library: $(counts "$work/suite.ours.outcomes") (${SUITE_SECS}s with, ${sys_secs}s without)"
    fi
}

# shellcheck source=interop.sh
source "$here/interop.sh"

# --- run -----------------------------------------------------------------------------------
: >"$out/results.txt"
echo "checks.sh: $(uname -r), rdma-core $(dpkg-query -W -f='${Version}' rdma-core), perftest $(dpkg-query -W -f='${Version}' perftest)${B:+, library $B/lib}"
if ((!baseline)); then
    for f in "$B/lib/libibverbs.so.1" "$B/bin/rdmaemu" "$B/bin/nicsimd"; do
        [ -e "$f" ] || { echo "checks.sh: $f missing in the guest (is the build tree shared at its own path?)"; exit 1; }
    done
    missing=$(ldd "$B/bin/nicsimd" "$B/lib/libibverbs.so.1" "$B/bin/rdmaemu" 2>&1 | grep 'not found')
    [ -z "$missing" ] || echo "checks.sh: libraries missing in the guest: $missing"
fi
for c in "${checks[@]}"; do
    if ! declare -F "check_$c" >/dev/null; then
        result "$c" FAIL "no such check"; continue
    fi
    if ((baseline)) && [[ $c == mixed_* || $c == trace_* || $c == interop_* ]]; then continue; fi
    LOG=$out/$c.log
    : >"$LOG"
    t0=$(now)
    "check_$c"
    echo "[check $c: $(since "$t0") s]" >>"$LOG"
done
emu_down
((iop_ready)) && iop_down
exit $failed
