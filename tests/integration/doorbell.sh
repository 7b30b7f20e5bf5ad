#!/usr/bin/env bash
# doorbell: posting work costs the app no syscall while its NIC is awake (it polls the doorbell
# bits), and one write to the doorbell eventfd when the NIC sleeps; the NIC, woken by a kick or a
# packet, neither reads the kick nor re-arms epoll (nicsim/daemon/wake_set.h). Counted with strace
# on unmodified perftest clients and on a NIC: the difference between a run of N1 and one of N2
# messages is what the steady state costs per message. A real-time NIC woken by its own app's
# kick moves off the app's CPU rather than preempt it at every post (nicsim/daemon/poll_loop.h).
# Last, a polling NIC at normal priority that shares its CPU with apps that spin on memory stops
# polling (nicsim/daemon/poll_window.h), as status counts.
#
# usage: doorbell.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
command -v strace >/dev/null || fail "strace is missing (tools/install-deps.sh installs it)"

# pair PROG N [args]: PROG's server on host 1 and its client on host 2, N iterations; fails
# when the client does.
pair() {
    local prog=$1 n=$2
    shift 2
    emu_pair doorbell 1 2 60 -- "$prog" "$@" -n "$n" -F -p "$(free_tcp_port)"
    ((PAIR_CLIENT_RC == 0)) || { emu_pair_dump doorbell; fail "$prog client failed"; }
}

# calls SYSCALL PROG N [args]: the client's SYSCALL calls in a run of N iterations.
calls() {
    local syscall=$1
    shift
    PAIR_CLIENT_PREFIX=(strace -f -c -e trace="$syscall" -o "$EMU_WORK/strace")
    pair "$@"
    PAIR_CLIENT_PREFIX=()
    awk -v s="$syscall" '$NF == s {print $4}' "$EMU_WORK/strace" | tail -1 | grep . || echo 0
}

# nic_calls PROG N [args]: host 1's NIC's epoll_ctl(2) and read(2) calls while a client of
# PROG runs N iterations against a server on host 1.
nic_calls() {
    local tracer
    strace -f -c -e trace=epoll_ctl,read -o "$EMU_WORK/nic.strace" -p "$(emu_host 1 daemon_pid)" \
        2>/dev/null &
    tracer=$!
    emu_bg_register "$tracer"
    sleep 1 # attached
    pair "$@"
    kill -INT "$tracer"
    wait "$tracer" || true
    awk '$NF == "epoll_ctl" || $NF == "read" {n += $4} END {print n + 0}' "$EMU_WORK/nic.strace"
}

per_message() { python3 -c "print(($2 - $1) / ($4 - $3))" "$@"; }

# The first steps are about NICs at normal priority: a real-time one woken per message on the other
# CPU is often still awake when the next post comes, and one that polls for ever holds its CPU.
step "a NIC that stays awake (--poll-us 9999999): no doorbell writes"
emu_up 2 --poll-us 9999999 --scheduling normal
a=$(calls write ib_write_bw 1000 -s 4096)
b=$(calls write ib_write_bw 9000 -s 4096)
r=$(per_message "$a" "$b" 1000 9000)
echo "write(2) calls: $a for 1000 messages, $b for 9000: $r per message"
python3 -c "import sys; sys.exit(0 if $r <= 0.01 else 1)" ||
    fail "the app wrote the doorbell although its NIC was awake ($r per message)"
ok "posting to an awake NIC: $r write(2) calls per message"
"$RDMAEMU" down >/dev/null

step "a NIC that sleeps at once (--poll-us 0): a ping-pong kicks it"
emu_up 2 --poll-us 0 --scheduling normal
a=$(calls write ib_send_lat 200 -s 2)
b=$(calls write ib_send_lat 1200 -s 2)
r=$(per_message "$a" "$b" 200 1200)
echo "write(2) calls: $a for 200 round trips, $b for 1200: $r per round trip"
python3 -c "import sys; sys.exit(0 if $r >= 0.5 else 1)" ||
    fail "a sleeping NIC was not kicked ($r writes per round trip)"
ok "posting to a sleeping NIC: $r doorbell writes per round trip"

step "the NIC woken per message: no epoll re-arm, no read of the kick"
a=$(nic_calls ib_send_lat 200 -s 2)
b=$(nic_calls ib_send_lat 1200 -s 2)
r=$(per_message "$a" "$b" 200 1200)
echo "NIC epoll_ctl(2) + read(2) calls: $a for 200 round trips, $b for 1200: $r per round trip"
python3 -c "import sys; sys.exit(0 if $r <= 0.05 else 1)" ||
    fail "the NIC re-armed epoll or read its kicks per message ($r calls per round trip)"
ok "a NIC woken per message: $r epoll_ctl + read calls per round trip"
"$RDMAEMU" down >/dev/null

step "NICs at real-time priority (--scheduling realtime): the app's polls give up no CPU"
emu_up 2 --scheduling realtime
grep -q "scheduling: real-time" "$RDMAEMU_RUNTIME_DIR/host1/nicsimd.log" ||
    fail "host 1's NIC did not get real-time priority: $(grep -i "real-time" "$RDMAEMU_RUNTIME_DIR/host1/nicsimd.log")"
"$RDMAEMU" status | grep -q "scheduling: real-time (SCHED_FIFO 1)" ||
    fail "rdmaemu status does not say the NICs run at real-time priority: $("$RDMAEMU" status | head -3)"
a=$(calls sched_yield ib_write_bw 1000 -s 65536)
b=$(calls sched_yield ib_write_bw 5000 -s 65536)
r=$(per_message "$a" "$b" 1000 5000)
echo "sched_yield(2) calls: $a for 1000 messages, $b for 5000: $r per message"
python3 -c "import sys; sys.exit(0 if $r <= 0.01 else 1)" ||
    fail "the app yielded the CPU to a real-time NIC ($r sched_yield calls per message)"
ok "polling a real-time NIC: $r sched_yield calls per message"

step "a real-time NIC woken by its app's kick on the app's CPU moves to another"
cpu=$(taskset -cp $$ | sed 's/.*: *//; s/[,-].*//') # the first CPU this test may use
if (($(nproc) < 2)); then
    echo "one CPU: a NIC has no other CPU to move to, nothing to check"
else
    # Host 2's NIC starts on the CPU its app runs on.
    taskset -cp "$cpu" "$(emu_host 2 daemon_pid)" >/dev/null
    emu_status >/dev/null
    moves_before=$(emu_json 'host(2)["counters"]["cpu_moves"]')
    datagrams_before=$(emu_json 'host(2)["counters"]["tx_datagrams"]')
    PAIR_CLIENT_PREFIX=(taskset -c "$cpu")
    pair ib_send_bw 20000 -s 4096
    PAIR_CLIENT_PREFIX=()
    emu_status >/dev/null
    moves=$(($(emu_json 'host(2)["counters"]["cpu_moves"]') - moves_before))
    datagrams=$(($(emu_json 'host(2)["counters"]["tx_datagrams"]') - datagrams_before))
    echo "ib_send_bw 4 KiB, the client and its NIC on CPU $cpu: $moves moves, $datagrams datagrams"
    ((moves >= 1)) || fail "host 2's NIC stayed on its app's CPU (cpu_moves 0)"
    ((datagrams <= 5000)) ||
        fail "host 2's NIC sent about a datagram per SEND ($datagrams for 20000): woken per post"
    # Moved, not held: every CPU it was started on is allowed again, so that two NICs that
    # left their apps' CPUs are not held on one.
    cpus_now=$(taskset -cp "$(emu_host 2 daemon_pid)" | sed 's/.*: *//')
    [[ $cpus_now == "$(taskset -cp $$ | sed 's/.*: *//')" ]] ||
        fail "host 2's NIC stays held on CPUs $cpus_now after its move"
    ok "a real-time NIC left its app's CPU ($moves moves): $datagrams datagrams for 20000 SENDs"
fi
"$RDMAEMU" down >/dev/null

# Last: it pins this shell, and so the daemons and the apps, to one CPU.
step "a polling NIC (normal priority) beside an app that spins on memory stops polling"
cpu=$(taskset -cp $$ | sed 's/.*: *//; s/[,-].*//') # the first CPU this test may use
taskset -cp "$cpu" $$ >/dev/null
emu_up 2 --scheduling normal # its default window is guarded (--poll-us N is not)
pair ib_write_lat 2000 -s 2
emu_status >/dev/null
s1=$(emu_json 'host(1)["counters"]["polls_suspended"]')
s2=$(emu_json 'host(2)["counters"]["polls_suspended"]')
echo "ib_write_lat on one CPU: polling suspended $s1 times on host 1, $s2 on host 2"
((s1 + s2 > 0)) ||
    fail "the NICs kept polling beside apps that spin without yielding (polls_suspended 0)"
"$RDMAEMU" status | grep -q "polls_suspended=[1-9]" ||
    fail "rdmaemu status does not show polls_suspended: $("$RDMAEMU" status | grep wire)"
ok "NICs beside apps that never yield: polling suspended $((s1 + s2)) times"
