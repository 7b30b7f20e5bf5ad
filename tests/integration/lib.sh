# Shared helpers for the integration tests (bash; source it, don't run it).
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   emu_setup /path/to/rdmaemu     # fresh runtime dir, cleanup trap on EXIT
#   emu_up 2 [--drop 0.05 ...]     # rdmaemu up --hosts 2 [...], remembers the daemon pids
#   emu_host 1 address             # a field of host 1 from `rdmaemu status --json`
#   emu_run 1 [--preload] -- cmd   # rdmaemu run --host 1 ... -- cmd
#   fail "message"                 # prints FAIL and exits 1 (the trap stops the hosts)
#   emu_pair LABEL 1 2 SECS -- cmd # server on host 1, client (cmd 127.0.0.1) on host 2
#   emu_perftest ROWS SECS ib_send_bw -n 100  # the same for perftest, checks its results table
#
# The EXIT trap kills the background processes the test registered (emu_bg_register), runs
# `rdmaemu down`, kills any daemon of ours still alive by pid, prints the daemon logs when the
# test failed, and removes the runtime dir (kept when RDMAEMU_KEEP_RUNTIME=1).

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

ok() { echo "ok   $*"; }

step() { echo "---- $*"; }

emu_setup() {
    RDMAEMU=$1
    [[ -x $RDMAEMU ]] || fail "rdmaemu not found or not executable: $RDMAEMU"
    RDMAEMU_RUNTIME_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rdmaemu-it.XXXXXX")
    export RDMAEMU_RUNTIME_DIR
    unset RDMAEMU_HOST RDMAEMU_SOCKET
    EMU_DAEMON_PIDS=()
    EMU_BG_PIDS=()
    EMU_WORK=$RDMAEMU_RUNTIME_DIR/.test
    mkdir -p "$EMU_WORK"
    trap emu_cleanup EXIT
    echo "runtime dir: $RDMAEMU_RUNTIME_DIR"
}

emu_bg_register() { EMU_BG_PIDS+=("$@"); }

# emu_reserve_huge_pages N WHAT: at least N 2 MiB huge pages for this test (as root). A
# machine-wide setting, so only ever raised, and restored at exit only if nobody changed it
# meanwhile. WHAT names what needs them, for the note when they cannot be had.
HUGE=/proc/sys/vm/nr_hugepages
huge_before=
huge_set=
# Always succeeds: it runs in the EXIT trap under set -e, where a false test here would end the
# trap before emu_cleanup stops the hosts (whose daemons then hold the build lock's descriptor).
restore_huge_pages() {
    if [[ -n $huge_set && $(cat "$HUGE" 2>/dev/null) == "$huge_set" ]]; then
        echo "$huge_before" >"$HUGE" 2>/dev/null || echo "note: could not restore $HUGE" >&2
    fi
    return 0
}
emu_reserve_huge_pages() {
    local want=$1 what=$2
    if [[ $(id -u) == 0 && -w $HUGE ]]; then
        huge_before=$(cat "$HUGE")
        if ((huge_before < want)); then
            trap 'huge_rc=$?; restore_huge_pages; (exit $huge_rc); emu_cleanup' EXIT
            echo "$want" >"$HUGE" 2>/dev/null || true
            huge_set=$(cat "$HUGE")
            echo "huge pages: $huge_before -> $huge_set (restored afterwards)"
        fi
    else
        echo "huge pages: not root; $what skip unless some are allocated"
    fi
}

emu_cleanup() {
    local rc=$?
    set +e
    local p
    for p in "${EMU_BG_PIDS[@]}"; do
        kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
    done
    if [[ -n ${RDMAEMU_RUNTIME_DIR:-} && -d $RDMAEMU_RUNTIME_DIR ]]; then
        timeout 20 "$RDMAEMU" down >"$EMU_WORK/down.out" 2>&1 ||
            echo "note: rdmaemu down failed: $(cat "$EMU_WORK/down.out")" >&2
        for p in "${EMU_DAEMON_PIDS[@]}"; do
            local i
            for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
            if kill -0 "$p" 2>/dev/null; then
                echo "note: daemon pid $p still alive after rdmaemu down; killing it" >&2
                kill -KILL "$p" 2>/dev/null
            fi
        done
        if ((rc != 0)); then
            local log
            for log in "$RDMAEMU_RUNTIME_DIR"/host*/nicsimd.log; do
                [[ -f $log ]] || continue
                echo "==== last lines of $log" >&2
                tail -n 40 "$log" >&2
            done
        fi
        if [[ ${RDMAEMU_KEEP_RUNTIME:-0} == 1 ]]; then
            echo "runtime dir kept: $RDMAEMU_RUNTIME_DIR" >&2
        else
            rm -rf "$RDMAEMU_RUNTIME_DIR"
        fi
    fi
    if ((rc == 0)); then echo "PASS"; else echo "FAILED (exit $rc)" >&2; fi
    exit "$rc"
}

# rdmaemu up --hosts N [more up options]; checks every host is up and remembers the daemon pids.
# The array EMU_UP_PREFIX, when set, runs `rdmaemu up` under that command (setpriv ...).
emu_up() {
    local n=$1
    shift
    local rc=0
    timeout 60 ${EMU_UP_PREFIX[@]+"${EMU_UP_PREFIX[@]}"} "$RDMAEMU" up --hosts "$n" "$@" \
        >"$EMU_WORK/up.out" 2>&1 || rc=$?
    cat "$EMU_WORK/up.out"
    ((rc == 0)) || fail "rdmaemu up --hosts $n $* exited $rc"
    emu_status >/dev/null
    local h
    for ((h = 1; h <= n; h++)); do
        [[ $(emu_host "$h" up) == True ]] || fail "status --json: host $h is not up after rdmaemu up"
        local pid
        pid=$(emu_host "$h" daemon_pid)
        [[ $pid =~ ^[0-9]+$ ]] || fail "status --json: host $h has no daemon_pid ($pid)"
        kill -0 "$pid" 2>/dev/null || fail "host $h daemon pid $pid is not running"
        EMU_DAEMON_PIDS+=("$pid")
    done
}

# rdmaemu status --json into $EMU_WORK/status.json (and stdout).
emu_status() {
    local rc=0
    timeout 20 "$RDMAEMU" status --json >"$EMU_WORK/status.json" 2>"$EMU_WORK/status.err" || rc=$?
    ((rc == 0)) || fail "rdmaemu status --json exited $rc: $(cat "$EMU_WORK/status.err")"
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$EMU_WORK/status.json" 2>/dev/null ||
        fail "rdmaemu status --json printed invalid JSON: $(head -c 2000 "$EMU_WORK/status.json")"
    cat "$EMU_WORK/status.json"
}

# Evaluates a Python expression over the last status JSON, bound as `d`; prints the result.
emu_json() {
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
def host(i):
    return next(h for h in d["hosts"] if h["host"] == i)
print(eval(sys.argv[2]))
' "$EMU_WORK/status.json" "$1"
}

# A field of host I from a fresh status.
emu_host() {
    emu_status >/dev/null
    emu_json "host($1)[\"$2\"]"
}

# rdmaemu run --host I [--preload] -- CMD...
emu_run() {
    local host=$1
    shift
    "$RDMAEMU" run --host "$host" "$@"
}

# Fails unless host H holds no context session within 3 s (after a program exited, the NIC
# must have ended its sessions). $2 names the program in the message.
emu_expect_no_context_session() {
    local h=$1 who=$2 i left
    for i in $(seq 30); do
        emu_status >/dev/null
        left=$(emu_json "[s for s in host($h).get('sessions', []) if s.get('kind') == 'context']")
        [[ $left == "[]" ]] && return 0
        sleep 0.1
    done
    fail "host $h: after $who exited, status still shows context sessions: $left"
}

# Sessions of host I (from a fresh status) whose pid is P: prints them as JSON, one per line.
emu_sessions_of_pid() {
    emu_status >/dev/null
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
h = next(h for h in d["hosts"] if h["host"] == int(sys.argv[2]))
for s in h.get("sessions", []):
    if s.get("pid") == int(sys.argv[3]):
        print(json.dumps(s))
' "$EMU_WORK/status.json" "$1" "$2"
}

# Waits up to $2 seconds (default 20) for file $1 to exist; fails early if pid $3 (optional) dies.
wait_for_file() {
    local f=$1 secs=${2:-20} pid=${3:-}
    local i
    for ((i = 0; i < secs * 10; i++)); do
        [[ -s $f ]] && return 0
        if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
        sleep 0.1
    done
    return 1
}

# Escapes a string for use in an extended/Perl regular expression.
re_escape() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }

# A TCP port nothing listens on now, for a side channel: programs that default to a fixed port
# (18515) would collide with other test runs on the same machine.
free_tcp_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# True when something listens on TCP port $2 in the network namespace of pid $1: programs under
# `rdmaemu run` are in their set's namespace, where this shell's ss(8) does not look.
tcp_listening_in() {
    local hex
    hex=$(printf ':%04X' "$2")
    awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 }
        END { exit !found }' "/proc/$1/net/tcp" "/proc/$1/net/tcp6" 2>/dev/null
}

# Waits up to $2 seconds for a TCP listener on port $1; fails early if pid $3 (optional) dies.
# With a pid, looks in that process's network namespace.
wait_tcp_listen() {
    local port=$1 secs=${2:-20} pid=${3:-}
    local i
    for ((i = 0; i < secs * 10; i++)); do
        if [[ -n $pid ]]; then
            tcp_listening_in "$pid" "$port" && return 0
        elif [[ -n $(ss -Hltn "sport = :$port" 2>/dev/null) ]]; then
            return 0
        fi
        if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
        sleep 0.1
    done
    return 1
}

# emu_pair LABEL SERVER_HOST CLIENT_HOST SECS -- CMD...
# A client/server verbs program over a TCP side channel: `CMD` on SERVER_HOST in the background,
# then, once something listens on the port given in CMD as `-p PORT`, `CMD 127.0.0.1` on
# CLIENT_HOST (any loopback address reaches the server). Each side is bounded by SECS (exit
# status 124 when it ran out).
# Output goes to $EMU_WORK/LABEL.server and LABEL.client; sets PAIR_SERVER_RC, PAIR_CLIENT_RC
# and PAIR_SECS (wall time of the whole pair, seconds with a decimal). Never fails by itself.
# The array PAIR_CLIENT_EXTRA, when set, adds arguments on the client's side only (before the
# server address); the array PAIR_CLIENT_PREFIX, when set, runs the client under that command
# (strace ...).
emu_pair() {
    local label=$1 shost=$2 chost=$3 secs=$4
    shift 4
    [[ $1 == -- ]] && shift
    local port="" a prev=""
    for a in "$@"; do
        [[ $prev == -p ]] && port=$a
        prev=$a
    done
    [[ -n $port ]] || fail "emu_pair $label: the command has no -p PORT: $*"
    local sout=$EMU_WORK/$label.server cout=$EMU_WORK/$label.client
    local t0
    t0=$(date +%s%N)
    # `rdmaemu run` execs the program, so $! is the server itself (the EXIT trap can kill it).
    "$RDMAEMU" run --host "$shost" -- "$@" >"$sout" 2>&1 &
    local spid=$!
    emu_bg_register "$spid"
    PAIR_CLIENT_RC=0
    if wait_tcp_listen "$port" 20 "$spid"; then
        timeout -k 5 "$secs" "$RDMAEMU" run --host "$chost" -- \
            ${PAIR_CLIENT_PREFIX[@]+"${PAIR_CLIENT_PREFIX[@]}"} "$@" \
            ${PAIR_CLIENT_EXTRA[@]+"${PAIR_CLIENT_EXTRA[@]}"} 127.0.0.1 >"$cout" 2>&1 ||
            PAIR_CLIENT_RC=$?
    else
        echo "server did not listen on TCP port $port within 20 s (or exited)" >"$cout"
        PAIR_CLIENT_RC=255
    fi
    # The server has up to SECS from its start; then it is killed and counts as timed out (124).
    local deadline=$((t0 + secs * 1000000000))
    while kill -0 "$spid" 2>/dev/null && (($(date +%s%N) < deadline)); do sleep 0.1; done
    if kill -0 "$spid" 2>/dev/null; then
        kill -TERM "$spid" 2>/dev/null || true
        sleep 1
        kill -KILL "$spid" 2>/dev/null || true
        wait "$spid" 2>/dev/null || true
        echo "(killed by the test: still running after ${secs}s)" >>"$sout"
        PAIR_SERVER_RC=124
    else
        PAIR_SERVER_RC=0
        wait "$spid" || PAIR_SERVER_RC=$?
    fi
    PAIR_SECS=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
}

# Prints the output of both ends of the last emu_pair LABEL, for a failure report.
emu_pair_dump() {
    local label=$1 side
    for side in server client; do
        echo "==== $label $side ($EMU_WORK/$label.$side):" >&2
        tail -n 40 "$EMU_WORK/$label.$side" >&2
    done
}

# Rows of a perftest results table in file $1: "<bytes> <iterations> <decimal numbers>...".
perftest_rows() {
    grep -E '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9]+\.[0-9]+' "$1" || true
}

# emu_perftest ROWS SECS PROGRAM [ARGS...]
# A perftest program (ib_send_bw ...) with a free -p port: server on host 1, client on host 2
# connecting to 127.0.0.1. Fails unless both exit 0 and the client's results table has ROWS
# rows. Leaves the outputs in $EMU_WORK/<label>.server|client, the label in PERF_LABEL.
emu_perftest() {
    local rows=$1 secs=$2 prog=$3
    shift 3
    local port
    port=$(free_tcp_port)
    PERF_LABEL=$(printf '%s' "$prog $*" | tr -cs 'a-zA-Z0-9_' '.')
    local cmd=("$prog" -p "$port" "$@")
    emu_pair "$PERF_LABEL" 1 2 "$secs" -- "${cmd[@]}"
    local what="${cmd[*]} (server host 1, client host 2 -> 127.0.0.1)"
    if ((PAIR_SERVER_RC != 0 || PAIR_CLIENT_RC != 0)); then
        emu_pair_dump "$PERF_LABEL"
        fail "$what: server exited $PAIR_SERVER_RC, client $PAIR_CLIENT_RC (after ${PAIR_SECS}s; 124 = timed out)"
    fi
    local got
    got=$(perftest_rows "$EMU_WORK/$PERF_LABEL.client" | wc -l)
    if ((got != rows)); then
        emu_pair_dump "$PERF_LABEL"
        fail "$what: the client's results table has $got rows, expected $rows"
    fi
    ok "$what: ${PAIR_SECS}s, $got result row(s); last:"
    grep -E '^[[:space:]]*#bytes' "$EMU_WORK/$PERF_LABEL.client" | head -n 1
    perftest_rows "$EMU_WORK/$PERF_LABEL.client" | tail -n 1
}

# Waits up to $3 seconds (default 20) for a CM ID of host $1 listening on port $2 (rdma_cm);
# fails early if pid $4 (optional) dies.
wait_cm_listen() {
    local host=$1 port=$2 secs=${3:-20} pid=${4:-}
    local i
    for ((i = 0; i < secs * 10; i++)); do
        emu_status >/dev/null
        [[ $(emu_json "any(c['state'] == 'listen' and c['local'].endswith(':$port') for s in host($host)['sessions'] for c in s.get('cm_ids', []))") == True ]] && return 0
        if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
        sleep 0.1
    done
    return 1
}

# emu_cm_pair LABEL PORT SECS SERVER_CMD... -- CLIENT_CMD...
# An rdma_cm program pair: the server on host 1 in the background, then, once host 1 has a CM
# listener on PORT, the client on host 2. Each side is bounded by SECS (124: it ran out).
# Output goes to $EMU_WORK/LABEL.server and LABEL.client, stderr to LABEL.server.err and
# LABEL.client.err (programs such as rping write both, and their stdout is buffered); sets
# PAIR_SERVER_RC, PAIR_CLIENT_RC and PAIR_SECS. Never fails by itself.
emu_cm_pair() {
    local label=$1 port=$2 secs=$3
    shift 3
    local server=() client=()
    while (($#)) && [[ $1 != -- ]]; do
        server+=("$1")
        shift
    done
    shift
    client=("$@")
    local sout=$EMU_WORK/$label.server cout=$EMU_WORK/$label.client
    local t0
    t0=$(date +%s%N)
    "$RDMAEMU" run --host 1 -- "${server[@]}" >"$sout" 2>"$sout.err" &
    local spid=$!
    emu_bg_register "$spid"
    PAIR_CLIENT_RC=0
    if wait_cm_listen 1 "$port" 20 "$spid"; then
        timeout -k 5 "$secs" "$RDMAEMU" run --host 2 -- "${client[@]}" >"$cout" 2>"$cout.err" ||
            PAIR_CLIENT_RC=$?
    else
        echo "server had no CM listener on port $port within 20 s (or exited)" >"$cout"
        PAIR_CLIENT_RC=255
    fi
    local deadline=$((t0 + secs * 1000000000))
    while kill -0 "$spid" 2>/dev/null && (($(date +%s%N) < deadline)); do sleep 0.1; done
    if kill -0 "$spid" 2>/dev/null; then
        kill -KILL "$spid" 2>/dev/null || true
        wait "$spid" 2>/dev/null || true
        echo "(killed by the test: still running after ${secs}s)" >>"$sout"
        PAIR_SERVER_RC=124
    else
        PAIR_SERVER_RC=0
        wait "$spid" || PAIR_SERVER_RC=$?
    fi
    PAIR_SECS=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
}

# Prints the output of both ends of the last emu_cm_pair LABEL, for a failure report.
emu_cm_pair_dump() {
    local label=$1 f
    for f in server server.err client client.err; do
        echo "==== $label $f ($EMU_WORK/$label.$f):" >&2
        tail -n 20 "$EMU_WORK/$label.$f" 2>/dev/null | cut -c1-300 >&2
    done
}

# emu_cm_pair_ok LABEL PORT SERVER_CMD... -- CLIENT_CMD...: emu_cm_pair within 120 s, failing the
# test (both ends' output shown) unless both exit 0.
emu_cm_pair_ok() {
    local label=$1 port=$2
    shift 2
    emu_cm_pair "$label" "$port" 120 "$@"
    if ((PAIR_SERVER_RC != 0 || PAIR_CLIENT_RC != 0)); then
        emu_cm_pair_dump "$label"
        fail "$label: server exited $PAIR_SERVER_RC, client $PAIR_CLIENT_RC (after ${PAIR_SECS}s)"
    fi
    ok "$label: ${PAIR_SECS}s"
}
