#!/usr/bin/env bash
# check_result.sh OUTDIR CHECK: the verdict of one check of the last VM run (run_checks.sh): prints
# its result line and log, exits 0 when it passed. The ctest tests vm_<check>.
set -uo pipefail
outdir=${1:?usage: check_result.sh OUTDIR CHECK}
check=${2:?usage: check_result.sh OUTDIR CHECK}
results=$outdir/out/results.txt
if [ ! -f "$results" ]; then
    echo "FAIL: no VM results ($results): the VM run (test vm_run) did not complete; see its output"
    exit 1
fi
line=$(grep -E "^VMCHECK $check (PASS|FAIL)" "$results" | tail -1)
if [ -z "$line" ]; then
    echo "FAIL: the VM run has no result for $check (it stopped early?); last lines of its output:"
    tail -n 15 "$outdir/output.log" 2>/dev/null | sed 's/^/  | /'
    exit 1
fi
echo "$line"
if [ -f "$outdir/out/$check.log" ]; then
    echo "--- log ($outdir/out/$check.log, last 150 lines):"
    tail -n 150 "$outdir/out/$check.log"
fi
[[ $line == "VMCHECK $check PASS"* ]]
