#!/usr/bin/env bash
# rdma-core's own test suite (Debian's python3-pyverbs ships it) against emu0 on one emulated
# host. Prints the ok / skipped / failed / error counts and the skip reasons, and fails on any
# failure or error, or when fewer tests pass than MIN_OK (what the emulator passed when this
# floor was last raised; docs/features.md lists the skips), or when any of test_rdmacm's 10
# tests skips.
# Run as root, it allocates HUGE_PAGES (default 64) 2 MiB huge pages for the run when the
# machine has fewer (the suite's huge-page tests skip without them) and puts the old count
# back afterwards.
# Usage: rdma_core_suite.sh RDMAEMU [MIN_OK]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
MIN_OK=${2:-160}

SUITE=/usr/share/doc/rdma-core/tests
[[ -d $SUITE ]] || fail "$SUITE not found (package python3-pyverbs; make test installs it)"
cp -r "$SUITE" "$EMU_WORK/tests"
gunzip -f "$EMU_WORK"/tests/*.gz

emu_reserve_huge_pages "${HUGE_PAGES:-64}" "the suite's huge-page tests"

emu_up 1
log=$EMU_WORK/suite.log
rc=0
# Python's warnings would split a test's "... ok" over two lines.
(cd "$EMU_WORK" && PYTHONWARNINGS=ignore timeout 600 "$RDMAEMU" run --host 1 -- \
    /usr/bin/python3 tests/run_tests.py --dev emu0 -v) >"$log" 2>&1 || rc=$?

ran=$(grep -oE '^Ran [0-9]+ tests' "$log" | grep -oE '[0-9]+' || echo 0)
passed=$(grep -cE '(\.\.\. |^)ok$' "$log" || true) # a test's own output can split its line
skipped=$(grep -cE "\.\.\. skipped " "$log" || true)
# unittest's report after the run has one "FAIL: test" or "ERROR: test" header per failure or
# error; a verdict after "..." can be split from its line by the test's own output.
failed=$(grep -cE '^FAIL: test' "$log" || true)
errors=$(grep -cE '^ERROR: test' "$log" || true)
echo "rdma-core tests: $ran run, $passed ok, $skipped skipped, $failed failed, $errors errors (exit $rc)"
echo "---- skip reasons"
# unittest quotes a reason that contains ' with ".
grep -oE "skipped ('[^']*'|\"[^\"]*\")\$" "$log" | sort | uniq -c | sort -rn
if ((failed + errors)); then
    grep -E '^(FAIL|ERROR): test' "$log"
    sed -n '/^=====/,$p' "$log" | head -n 200
    fail "$failed failures and $errors errors in rdma-core's test suite"
fi
((ran > 0)) || { tail -n 50 "$log"; fail "the suite ran no test"; }
# The rdma_cm tests need the device's net device (/sys/class/infiniband/emu0/device/net and the
# address `ip addr` shows on it): rdmaemu run's view of the host gives them one.
if grep -q "doesn't have net interface" "$log"; then
    fail "tests skipped for want of a net interface on emu0 (rdmaemu run's host view missing?)"
fi
echo "---- test_rdmacm"
grep -E '\(tests\.test_rdmacm\.' "$log" || true
rdmacm_ran=$(grep -cE '\(tests\.test_rdmacm\.' "$log" || true)
rdmacm_skipped=$(grep -cE '\(tests\.test_rdmacm\.[^)]*\) \.\.\. skipped' "$log" || true)
((rdmacm_ran >= 10 && rdmacm_skipped == 0)) ||
    fail "test_rdmacm: $rdmacm_ran tests seen, $rdmacm_skipped skipped (expected 10 run, none skipped)"
((passed >= MIN_OK)) || fail "only $passed tests ok, expected at least $MIN_OK"
ok "rdma-core's test suite: $passed ok (at least $MIN_OK), no failure, no error"
