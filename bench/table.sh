# shellcheck shell=bash
# bench/table.sh: the main table: perftest latency and bandwidth between two emulated hosts,
# each size right after its TCP and memcpy baselines so that both see the same load.
# Sourced by run.sh (uses lat_sizes, bw_sizes, lat_iters, bw_iters_big, bw_iters_small).
measure_table() {
    local size op iters
    for size in "${lat_sizes[@]}"; do
        sockperf_pp "$size"
        for op in send write read; do
            log "ib_${op}_lat -s $size -n $lat_iters"
            # -H: every sample, for the percentile plot.
            perftest_pair "lat.$op.$size" "ib_${op}_lat" -s "$size" -n "$lat_iters" -H ||
                failed=$((failed + 1))
        done
    done
    for size in "${bw_sizes[@]}"; do
        memcpy_bw "$size"
        iperf3_bw "$size"
        iters=$bw_iters_small
        ((size < 65536)) || iters=$bw_iters_big
        for op in send write read; do
            log "ib_${op}_bw -s $size -n $iters"
            perftest_pair "bw.$op.$size" "ib_${op}_bw" -s "$size" -n "$iters" ||
                failed=$((failed + 1))
        done
    done
}
