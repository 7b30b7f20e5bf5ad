#!/usr/bin/env bash
# kill_cleanup: a client holding PD, MR, comp channel, CQ, SRQ, QP and AH is killed with SIGKILL;
# within a couple of seconds `rdmaemu status --json` shows no session for it, while another
# client's session on the same host keeps its objects and keeps working, and new clients work.
#
# usage: kill_cleanup.sh RDMAEMU VERBS_OBJECTS
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
VO=$2
emu_setup "$1"
emu_up 1
DAEMON=$(emu_host 1 daemon_pid)

# start_holder NAME ARGS...: starts verbs_objects ARGS in the background on host 1 and waits for
# its ready file; sets HOLDER_PID (the verbs_objects process) and HOLDER_WRAPPER (rdmaemu run).
start_holder() {
    local name=$1
    shift
    emu_run 1 -- "$VO" "$@" --ready-file "$EMU_WORK/$name.pid" >"$EMU_WORK/$name.log" 2>&1 &
    HOLDER_WRAPPER=$!
    emu_bg_register "$HOLDER_WRAPPER"
    if ! wait_for_file "$EMU_WORK/$name.pid" 30 "$HOLDER_WRAPPER"; then
        cat "$EMU_WORK/$name.log"
        fail "holder $name did not get its objects (see its output above)"
    fi
    HOLDER_PID=$(cat "$EMU_WORK/$name.pid")
    emu_bg_register "$HOLDER_PID"
    ok "holder $name (pid $HOLDER_PID) holds its objects"
}

# expect_objects PID: the session of PID holds at least one object of each kind.
expect_objects() {
    local pid=$1 s
    s=$(emu_sessions_of_pid 1 "$pid")
    [[ -n $s ]] || fail "status --json shows no session for pid $pid while it holds objects: $(cat "$EMU_WORK/status.json")"
    [[ $(echo "$s" | wc -l) == 1 ]] || fail "status --json shows more than one session for pid $pid: $s"
    python3 - "$s" <<'PY' || fail "session of pid $pid: $s"
import json, sys
s = json.loads(sys.argv[1])
want = {"pd": 1, "mr": 1, "cq": 1, "qp": 1, "srq": 1, "ah": 1, "comp_channel": 1}
objs = s.get("objects", {})
bad = {k: objs.get(k) for k, v in want.items() if not isinstance(objs.get(k), int) or objs.get(k) < v}
if s.get("kind") != "context" or bad:
    print(f"expected kind 'context' and at least one of each object, got kind {s.get('kind')!r}, short: {bad}", file=sys.stderr)
    sys.exit(1)
PY
    ok "status: session of pid $pid holds $(echo "$s" | python3 -c 'import json,sys; print(json.load(sys.stdin)["objects"])')"
}

step "one holder killed with SIGKILL"
start_holder victim --hold
VICTIM=$HOLDER_PID
expect_objects "$VICTIM"
kill -KILL "$VICTIM"
start=$(date +%s.%N)
gone=0
for i in $(seq 30); do
    if [[ -z $(emu_sessions_of_pid 1 "$VICTIM") ]]; then gone=1; break; fi
    sleep 0.1
done
elapsed=$(python3 -c "import time; print(round(time.time() - $start, 2))")
((gone)) || fail "3 s after SIGKILL of pid $VICTIM, status --json still shows its session: $(emu_sessions_of_pid 1 "$VICTIM")"
ok "session of killed pid $VICTIM gone after ${elapsed}s"
kill -0 "$DAEMON" 2>/dev/null || fail "daemon pid $DAEMON died"
[[ $(emu_host 1 up) == True && $(emu_host 1 daemon_pid) == "$DAEMON" ]] ||
    fail "host 1 not up with the same daemon after the kill"
ok "daemon $DAEMON still up"

step "two holders, one killed: the other keeps its objects and they still work"
start_holder keeper --hold-until "$EMU_WORK/keeper.release"
KEEPER=$HOLDER_PID
KEEPER_WRAPPER=$HOLDER_WRAPPER
start_holder victim2 --hold
VICTIM2=$HOLDER_PID
expect_objects "$KEEPER"
expect_objects "$VICTIM2"
kill -KILL "$VICTIM2"
gone=0
for i in $(seq 30); do
    if [[ -z $(emu_sessions_of_pid 1 "$VICTIM2") ]]; then gone=1; break; fi
    sleep 0.1
done
((gone)) || fail "3 s after SIGKILL of pid $VICTIM2, its session is still listed: $(emu_sessions_of_pid 1 "$VICTIM2")"
ok "session of killed pid $VICTIM2 gone"
expect_objects "$KEEPER"
touch "$EMU_WORK/keeper.release"
rc=0
wait "$KEEPER_WRAPPER" || rc=$?
cat "$EMU_WORK/keeper.log"
((rc == 0)) || fail "the surviving holder (pid $KEEPER) failed after the other was killed: exit $rc; $(grep -m1 '^FAIL' "$EMU_WORK/keeper.log" || true)"
ok "surviving holder used and destroyed its objects, then ran a create/destroy cycle"
for i in $(seq 30); do
    [[ -z $(emu_sessions_of_pid 1 "$KEEPER") ]] && break
    sleep 0.1
done
[[ -z $(emu_sessions_of_pid 1 "$KEEPER") ]] || fail "session of pid $KEEPER still listed after it exited"

step "a new client works"
rc=0
emu_run 1 -- "$VO" --basic >"$EMU_WORK/after.log" 2>&1 || rc=$?
((rc == 0)) || { cat "$EMU_WORK/after.log"; fail "verbs_objects --basic after the kills exited $rc"; }
ok "verbs_objects --basic after the kills: $(grep '^PASS' "$EMU_WORK/after.log")"
