#!/usr/bin/env bash
# scheduling: which share of the CPU the NICs take (rdmaemu up --scheduling). By default (auto)
# a NIC runs at real-time priority where it may, and where it may not it runs normal and says so
# in its log without a warning: that is how most users run. Nor on one CPU, where a real-time NIC
# would preempt its app at every post. Asked for real-time and refused, it warns. Status says
# which each host got. The root-less runs drop CAP_SYS_NICE with setpriv, as a user's daemons
# run (RLIMIT_RTPRIO 0).
#
# usage: scheduling.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if ((EUID != 0)); then
    echo "SKIP: needs root, to compare a NIC that may take real-time priority with one that may not"
    exit 77
fi
command -v setpriv >/dev/null || fail "setpriv is missing (util-linux)"
emu_setup "$1"
log1() { cat "$RDMAEMU_RUNTIME_DIR/host1/nicsimd.log"; }

step "the default, as root: real-time priority"
emu_up 2
log1 | grep -q " I scheduling: real-time (SCHED_FIFO 1)" ||
    fail "host 1's NIC did not take real-time priority: $(log1 | grep -i "priority\|scheduling")"
[[ $(emu_host 1 scheduling) == realtime ]] || fail "status --json: $(emu_host 1 scheduling)"
"$RDMAEMU" status | grep -q "scheduling: real-time (SCHED_FIFO 1)" ||
    fail "rdmaemu status does not say so: $("$RDMAEMU" status | head -5)"
ok "real-time by default where allowed"
"$RDMAEMU" down >/dev/null

# shellcheck disable=SC2034 # read by emu_up (lib.sh)
EMU_UP_PREFIX=(setpriv --bounding-set=-sys_nice --inh-caps=-sys_nice)
step "the default, without CAP_SYS_NICE: normal, and the log says why without a warning"
emu_up 2
log1 | grep -q " I no real-time priority (Operation not permitted; root or an RLIMIT_RTPRIO" ||
    fail "host 1's log does not say why it runs normal: $(log1 | grep -i "priority\|scheduling")"
if log1 | grep -q " W .*real-time"; then fail "a warning for the default: $(log1 | grep " W ")"; fi
[[ $(emu_host 1 scheduling) == "normal, real-time refused" ]] ||
    fail "status --json: $(emu_host 1 scheduling)"
"$RDMAEMU" status | grep -q "scheduling: normal, real-time refused (its log says why)" ||
    fail "rdmaemu status does not say so: $("$RDMAEMU" status | head -5)"
ok "normal where real-time is not allowed, said at info level"
"$RDMAEMU" down >/dev/null

step "--scheduling realtime without CAP_SYS_NICE: a warning"
emu_up 2 --scheduling realtime
log1 | grep -q " W no real-time priority (Operation not permitted" ||
    fail "host 1's log does not warn: $(log1 | grep -i "priority\|scheduling")"
ok "real-time asked for and refused: warned"
"$RDMAEMU" down >/dev/null

cpu=$(taskset -cp $$ | sed 's/.*: *//; s/[,-].*//') # the first CPU this test may use
EMU_UP_PREFIX=(taskset -c "$cpu")
step "the default on one CPU: normal, and the log says why"
emu_up 2
log1 | grep -q " I one CPU to run on: scheduling normal" ||
    fail "host 1's log does not say why it runs normal: $(log1 | grep -i "priority\|scheduling")"
[[ $(emu_host 1 scheduling) == "normal, real-time refused" ]] ||
    fail "status --json: $(emu_host 1 scheduling)"
ok "normal on one CPU, said at info level"
"$RDMAEMU" down >/dev/null

EMU_UP_PREFIX=()
step "--scheduling normal: normal, as asked"
emu_up 2 --scheduling normal
if log1 | grep -q "real-time"; then fail "asked for normal: $(log1 | grep "real-time")"; fi
[[ $(emu_host 1 scheduling) == normal ]] || fail "status --json: $(emu_host 1 scheduling)"
"$RDMAEMU" status | grep -q "scheduling: normal (--scheduling normal)" ||
    fail "rdmaemu status does not say so: $("$RDMAEMU" status | head -5)"
ok "normal as asked"
