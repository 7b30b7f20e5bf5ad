#!/usr/bin/env bash
# front_door: what the rdmaemu command tells a new user outside the happy path. `--version`
# names the version, the commit and the control protocol; `up --subnet S` puts the hosts on
# 127.0.S.i, and a second set asking for the same subnet is refused with the reason; a runtime
# directory that cannot be created, or one on a read-only file system (root: a tmpfs mounted
# read-only), is refused saying to choose a writable one; `down` leaves only the logs.
#
# usage: front_door.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"

step "--version"
out=$("$RDMAEMU" --version)
echo "$out"
[[ $out =~ ^rdmaemu\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ [0-9a-z]+\),\ rdma-core\ 44\ ABI,\ control\ protocol\ [0-9]+$ ]] ||
    fail "--version printed '$out'"
ok "--version: $out"

step "up --subnet 201: the hosts are 127.0.201.1 and .2 (and the daemons inherit no descriptor)"
exec 9>"$EMU_WORK/held-by-the-caller"
emu_up 2 --subnet 201
exec 9>&-
for pid in "${EMU_DAEMON_PIDS[@]}"; do
    if ls -l "/proc/$pid/fd" | grep -q held-by-the-caller; then
        fail "nicsimd $pid holds a descriptor its caller had open"
    fi
done
ok "the daemons hold none of the caller's descriptors"
[[ $(emu_host 1 address) == 127.0.201.1 && $(emu_host 2 address) == 127.0.201.2 ]] ||
    fail "hosts at $(emu_host 1 address), $(emu_host 2 address), not 127.0.201.1/2"
ok "hosts on 127.0.201.1 and 127.0.201.2"

step "a second set on the same subnet is refused with the reason"
rc=0
RDMAEMU_RUNTIME_DIR=$EMU_WORK/second "$RDMAEMU" up --hosts 1 --subnet 201 >"$EMU_WORK/second.out" 2>&1 || rc=$?
cat "$EMU_WORK/second.out"
((rc != 0)) || fail "a second set on subnet 201 started"
grep -q 'UDP port 4791 is taken on 127.0.201.1: another set runs there' "$EMU_WORK/second.out" ||
    fail "the refusal does not say the subnet is taken"
ok "refused: $(head -1 "$EMU_WORK/second.out")"

step "--subnet out of range"
rc=0
RDMAEMU_RUNTIME_DIR=$EMU_WORK/third "$RDMAEMU" up --hosts 1 --subnet 300 >"$EMU_WORK/third.out" 2>&1 || rc=$?
cat "$EMU_WORK/third.out"
((rc != 0)) && grep -q -- '--subnet wants a number from 0 to 254' "$EMU_WORK/third.out" ||
    fail "--subnet 300 not refused with its range (exit $rc)"
ok "--subnet 300 refused"

step "down leaves only the logs (no socket of the diagnostics left)"
"$RDMAEMU" down
left=$(find "$RDMAEMU_RUNTIME_DIR" -path "$EMU_WORK" -prune -o -type s -print)
[[ -z $left ]] || fail "sockets left after down: $left"
ok "no socket left"

step "a runtime directory that cannot be created"
rc=0
RDMAEMU_RUNTIME_DIR=/proc/rdmaemu-nowhere "$RDMAEMU" up --hosts 1 >"$EMU_WORK/nowhere.out" 2>&1 || rc=$?
cat "$EMU_WORK/nowhere.out"
((rc != 0)) && grep -q 'cannot create /proc/rdmaemu-nowhere.*set RDMAEMU_RUNTIME_DIR to a directory you can write' "$EMU_WORK/nowhere.out" ||
    fail "an uncreatable runtime dir: exit $rc, message not as expected"
ok "uncreatable runtime dir refused, says what to do"

if ((EUID == 0)); then
    step "a runtime directory on a read-only file system"
    ro=$EMU_WORK/ro
    mkdir -p "$ro"
    mount -t tmpfs -o ro,mode=0700 tmpfs "$ro"
    rc=0
    RDMAEMU_RUNTIME_DIR=$ro "$RDMAEMU" up --hosts 1 >"$EMU_WORK/ro.out" 2>&1 || rc=$?
    umount "$ro"
    cat "$EMU_WORK/ro.out"
    ((rc != 0)) && grep -q "the runtime directory $ro is not writable (Read-only file system): set RDMAEMU_RUNTIME_DIR to a directory you can write" "$EMU_WORK/ro.out" ||
        fail "a read-only runtime dir: exit $rc, message not as expected"
    ok "read-only runtime dir refused, says what to do"
fi
echo PASS
