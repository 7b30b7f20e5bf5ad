#!/usr/bin/env bash
# Fuzzes one libFuzzer target for a bounded time over its seeds, in a scratch corpus (the seeds
# in the tree stay as they are). A crash fails the test; its input is kept under ARTIFACTS for
# tests/fuzz/regressions/<target>/.
#
# usage: run_fuzzer.sh TARGET SECONDS ARTIFACTS SEED_DIR...
set -euo pipefail
target=$1 seconds=$2 artifacts=$3
shift 3
name=$(basename "$target")
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmaemu-fuzz.XXXXXX")
log=$(mktemp "${TMPDIR:-/tmp}/rdmaemu-fuzz-log.XXXXXX")
trap 'rm -rf "$work" "$log"' EXIT
mkdir -p "$artifacts"
rc=0
"$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$work" "$@" 2>"$log" || rc=$?
grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::new_units_added)' "$log" || true
if ((rc != 0)); then
    tail -n 60 "$log"
    echo "FAIL: $name crashed (exit $rc); the input is in $artifacts/ (keep it in tests/fuzz/regressions/${name#fuzz_}/)"
    exit 1
fi
echo "ok   $name: ${seconds}s without a crash"
