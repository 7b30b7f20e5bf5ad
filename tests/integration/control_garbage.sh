#!/usr/bin/env bash
# control_garbage: while a well-behaved client holds objects on host 1, other connections send
# garbage to the daemon's control socket (control_garbage.py: random bytes, truncated header,
# wrong magic/version, unknown op, a 64 KiB datagram, valid headers with wrong lengths, garbage
# after a valid Hello). The daemon must stay up, close each bad connection, log each rejection,
# and the good client must then finish its work; a new client must work too.
#
# usage: control_garbage.sh RDMAEMU VERBS_OBJECTS
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
VO=$2
GARBAGE=$(dirname "${BASH_SOURCE[0]}")/control_garbage.py
emu_setup "$1"
emu_up 1
DAEMON=$(emu_host 1 daemon_pid)
SOCK=$RDMAEMU_RUNTIME_DIR/host1/nicsimd.sock
LOG=$RDMAEMU_RUNTIME_DIR/host1/nicsimd.log
[[ -S $SOCK ]] || fail "no control socket at $SOCK"
[[ -f $LOG ]] || fail "no daemon log at $LOG"

step "a good client holds objects"
emu_run 1 -- "$VO" --hold-until "$EMU_WORK/release" --ready-file "$EMU_WORK/good.pid" \
    >"$EMU_WORK/good.log" 2>&1 &
GOOD_WRAPPER=$!
emu_bg_register "$GOOD_WRAPPER"
wait_for_file "$EMU_WORK/good.pid" 30 "$GOOD_WRAPPER" || {
    cat "$EMU_WORK/good.log"
    fail "the good client did not get its objects"
}
GOOD=$(cat "$EMU_WORK/good.pid")
emu_bg_register "$GOOD"
[[ -n $(emu_sessions_of_pid 1 "$GOOD") ]] || fail "no session listed for the good client (pid $GOOD)"
ok "good client pid $GOOD: $(emu_sessions_of_pid 1 "$GOOD")"

step "garbage on other connections"
rc=0
python3 "$GARBAGE" "$SOCK" "$LOG" >"$EMU_WORK/garbage.out" 2>&1 || rc=$?
cat "$EMU_WORK/garbage.out"
GARBAGE_FAILED=$rc
SENDER=$(awk '/^garbage sender pid/ { print $4 }' "$EMU_WORK/garbage.out")

step "the daemon survived"
kill -0 "$DAEMON" 2>/dev/null || fail "daemon pid $DAEMON died during the garbage"
[[ $(emu_host 1 up) == True && $(emu_host 1 daemon_pid) == "$DAEMON" ]] ||
    fail "host 1 is not up with the same daemon (pid $DAEMON) after the garbage"
ok "daemon $DAEMON still up"
if [[ -n $SENDER ]]; then
    left=""
    for i in $(seq 30); do
        left=$(emu_sessions_of_pid 1 "$SENDER")
        [[ -z $left ]] && break
        sleep 0.1
    done
    [[ -z $left ]] || fail "sessions of the garbage sender (pid $SENDER) are still listed: $left"
    ok "no session of the garbage sender remains"
fi
[[ -n $(emu_sessions_of_pid 1 "$GOOD") ]] || fail "the good client's session (pid $GOOD) disappeared during the garbage"
ok "good client's session still there"

step "the good client finishes: uses and destroys its objects, then a create/destroy cycle"
touch "$EMU_WORK/release"
rc=0
wait "$GOOD_WRAPPER" || rc=$?
cat "$EMU_WORK/good.log"
((rc == 0)) || fail "the good client failed after the garbage: exit $rc; $(grep -m1 '^FAIL' "$EMU_WORK/good.log" || true)"
ok "good client: $(grep '^PASS' "$EMU_WORK/good.log")"

step "a new client works"
rc=0
emu_run 1 -- "$VO" --basic >"$EMU_WORK/new.log" 2>&1 || rc=$?
((rc == 0)) || { cat "$EMU_WORK/new.log"; fail "a new verbs_objects --basic after the garbage exited $rc"; }
ok "new client: $(grep '^PASS' "$EMU_WORK/new.log")"

((GARBAGE_FAILED == 0)) || fail "control_garbage.py reported failing cases (see FAIL lines above)"
