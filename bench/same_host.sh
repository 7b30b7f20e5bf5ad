# shellcheck shell=bash
# bench/same_host.sh: both perftest ends on ONE emulated host (server and client both
# `rdmaemu run --host 1`): one daemon moves each byte from one app's memory into the other's,
# which is what memcpy does without an emulator. Sourced by run.sh.
# Outputs: samehost.write.65536.cli, memcpy.65536.out.

measure_same_host() {
    [[ -s $work/memcpy.65536.out ]] || memcpy_bw 65536
    log "same host: ib_write_bw -s 65536 -n $bw_iters_big, both ends on host 1"
    perftest_pair --client-host 1 samehost.write.65536 ib_write_bw -s 65536 -n "$bw_iters_big" ||
        failed=$((failed + 1))
}
