# shellcheck shell=bash
# bench/sweep.sh: bandwidth and latency against message size, ib_write_bw / ib_write_lat next
# to iperf3 / sockperf at each size. Sourced by run.sh (uses sweep_bw_sizes, sweep_lat_sizes).
# Outputs: sweep.bw.SIZE.cli, sweep.iperf3.SIZE.json, sweep.lat.SIZE.cli and
# sweep.sockperf.SIZE.out (SIZE at least 14).

# sweep_bw_iters SIZE: about 256 MiB per run, at least 32 messages (8 MiB: 32) and at most
# 50000 (small messages: about 0.5 s at the emulator's message rate).
sweep_bw_iters() {
    local n=$(((256 << 20) / $1))
    ((n >= 32)) || n=32
    ((n <= 50000)) || n=50000
    echo "$n"
}

measure_sweep() {
    local size n
    for size in "${sweep_bw_sizes[@]}"; do
        # iperf3 writes at most 1 MiB at a time: larger messages are 1 MiB writes to TCP, which
        # is a byte stream anyway (run.sh's meta says sweep_tcp_max_write).
        iperf3_bw "$((size < sweep_tcp_max_write ? size : sweep_tcp_max_write))" \
            "sweep.iperf3.$size" -t "$sweep_tcp_secs"
        n=$(sweep_bw_iters "$size")
        log "sweep: ib_write_bw -s $size -n $n"
        perftest_pair "sweep.bw.$size" ib_write_bw -s "$size" -n "$n" || failed=$((failed + 1))
    done
    # sockperf's largest TCP message is 65507 bytes: the latency sweep stops below 64 KiB.
    for size in "${sweep_lat_sizes[@]}"; do
        # sockperf's smallest message is 14 bytes: one run stands for all sizes up to 14.
        if ((size >= 14)) || [[ ! -s $work/sweep.sockperf.14.out ]]; then
            sockperf_pp "$size" "$sweep_tcp_secs" "sweep.sockperf.$((size < 14 ? 14 : size))"
        fi
        log "sweep: ib_write_lat -s $size -n $sweep_lat_iters"
        perftest_pair "sweep.lat.$size" ib_write_lat -s "$size" -n "$sweep_lat_iters" ||
            failed=$((failed + 1))
    done
}
