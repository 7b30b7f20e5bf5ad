#!/usr/bin/env bash
# import_context: runs tests/integration/import_context.c (built against the system verbs.h and
# -libverbs) on one host: a context imported from a dup of another's command fd, with the
# first context's PD, MR and DM imported into it and RC traffic between the two. Afterwards
# the daemon must hold no session for it.
#
# usage: import_context.sh RDMAEMU IMPORT_CONTEXT
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PROG=$2
emu_setup "$1"
emu_up 1

out=$EMU_WORK/import.out rc=0
step "import_context on host 1"
emu_run 1 -- "$PROG" >"$out" 2>&1 || rc=$?
cat "$out"
((rc == 0)) || fail "import_context exited $rc: $(grep -m1 '^FAIL' "$out" || tail -n 3 "$out")"
grep -q '^PASS: import_context$' "$out" || fail "import_context printed no PASS line"
ok "import_context: $(grep -c '^ok ' "$out") checks passed"

emu_expect_no_context_session 1 import_context
ok "no session left behind"
