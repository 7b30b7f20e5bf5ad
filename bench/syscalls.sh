# shellcheck shell=bash
# bench/syscalls.sh: the application's syscalls per message, rdmaemu against TCP. Each
# program runs twice with different message counts, its syscalls counted (lib.sh's
# count_prefix: perf, else strace); the difference between the two counts over the difference
# in messages is the steady-state cost per message, without the setup both runs share.
# Sourced by run.sh (uses syscall_runs: two message counts for perftest, syscall_iperf3_blocks:
# two for iperf3, which writes 64 KiB four times as fast and whose select() calls between
# writes vary from run to run, syscall_sockperf_secs: two times).
# Outputs: sys.<what>.<messages>.cli|out (sys.sockperf.<seconds>s.out), the program's output,
# and the same name .count, the counter's.

measure_syscalls() {
    [[ -n $syscall_counter ]] || {
        log "syscalls: neither perf nor strace can count here; skipped"
        return 0
    }
    local i n blocks secs
    for i in 0 1; do
        n=${syscall_runs[i]} blocks=${syscall_iperf3_blocks[i]} secs=${syscall_sockperf_secs[i]}
        log "syscalls ($syscall_counter): ib_write_bw -s 65536 -n $n, client counted"
        perftest_pair --count-syscalls "$work/sys.write_bw.$n.count" "sys.write_bw.$n" \
            ib_write_bw -s 65536 -n "$n" || failed=$((failed + 1))
        log "syscalls ($syscall_counter): ib_send_lat -s 2 -n $n, client counted"
        perftest_pair --count-syscalls "$work/sys.send_lat.$n.count" "sys.send_lat.$n" \
            ib_send_lat -s 2 -n "$n" || failed=$((failed + 1))
        # The TCP clients: iperf3 writes exactly -k blocks; sockperf runs for a time and says
        # how many messages it sent.
        log "syscalls ($syscall_counter): iperf3 -l 65536 -k $blocks, client counted"
        local prefix
        read -ra prefix <<<"$(count_prefix "$work/sys.iperf3.$blocks.count")"
        tcp_pair "sys.iperf3.$blocks" iperf3 -s -1 -B 127.0.0.1 -p "{port}" -- \
            "${prefix[@]}" iperf3 -c 127.0.0.1 -p "{port}" -l 65536 -k "$blocks" ||
            log "iperf3 -k $blocks failed"
        log "syscalls ($syscall_counter): sockperf ping-pong 14 B ${secs}s, client counted"
        read -ra prefix <<<"$(count_prefix "$work/sys.sockperf.${secs}s.count")"
        tcp_pair "sys.sockperf.${secs}s" sockperf server --tcp -i 127.0.0.1 -p "{port}" -- \
            "${prefix[@]}" sockperf ping-pong --tcp -i 127.0.0.1 -p "{port}" -m 14 -t "$secs" ||
            log "sockperf ${secs}s failed"
    done
}
