#!/usr/bin/env bash
# corners: runs tests/integration/corners.c (built against the system verbs.h and -libverbs) on
# one host: memory-window binds, error precedence on RC, invalid and foreign handles, odd MRs,
# UD, PDs and SRQs, completion channels, each against what the hardware does (issue 17;
# docs/features.md, "Corner behaviour"). Then the host must hold no session of it.
#
# usage: corners.sh RDMAEMU CORNERS [CASE...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RDMAEMU_BIN=$1
PROG=$2
shift 2
emu_setup "$RDMAEMU_BIN"
emu_up 1

step "corners on host 1"
rc=0
timeout 240 "$RDMAEMU" run --host 1 -- "$PROG" "$@" >"$EMU_WORK/out.log" 2>&1 || rc=$?
cat "$EMU_WORK/out.log"
((rc == 0)) || fail "corners exited $rc; failed checks: $(grep '^FAIL' "$EMU_WORK/out.log" | head -n 8 | tr '\n' ';')"
grep -q '^PASS: ' "$EMU_WORK/out.log" || fail "no PASS line from corners"
ok "$(grep -c '^ok   corners' "$EMU_WORK/out.log") checks passed"
emu_expect_no_context_session 1 corners
