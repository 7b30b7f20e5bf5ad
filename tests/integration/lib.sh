# Shared helpers for the integration tests (bash; source it, don't run it).
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   emu_setup /path/to/rdmaemu     # fresh runtime dir, cleanup trap on EXIT
#   emu_up 2                       # rdmaemu up --hosts 2, remembers the daemon pids
#   emu_host 1 address             # a field of host 1 from `rdmaemu status --json`
#   emu_run 1 [--preload] -- cmd   # rdmaemu run --host 1 ... -- cmd
#   fail "message"                 # prints FAIL and exits 1 (the trap stops the hosts)
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

# rdmaemu up --hosts N; checks every host is up and remembers the daemon pids.
emu_up() {
    local n=$1
    local rc=0
    timeout 60 "$RDMAEMU" up --hosts "$n" >"$EMU_WORK/up.out" 2>&1 || rc=$?
    cat "$EMU_WORK/up.out"
    ((rc == 0)) || fail "rdmaemu up --hosts $n exited $rc"
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
