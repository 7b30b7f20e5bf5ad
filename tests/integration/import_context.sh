#!/usr/bin/env bash
# import_context: runs tests/integration/import_context.c (built against the system verbs.h and
# -libverbs) on one host: a context imported from a dup of another's command fd, in the same
# process and in another one, with the first context's PD, MR and DM imported and RC traffic
# between them. Then once more in mixed mode next to standin_libibverbs.so (a stand-in for
# rdma-core's library): a command fd of ours, even one passed from another process, must not be
# handed to rdma-core. Afterwards the daemon must hold no session for it.
#
# usage: import_context.sh RDMAEMU IMPORT_CONTEXT STANDIN_SO
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PROG=$2
STANDIN=$3
emu_setup "$1"
emu_up 1

run_import() { # LABEL [ENV...]
    local label=$1 out=$EMU_WORK/import.$1.out rc=0
    shift
    step "import_context on host 1 ($label)"
    emu_run 1 -- env "$@" "$PROG" >"$out" 2>&1 || rc=$?
    cat "$out"
    ((rc == 0)) || fail "$label: import_context exited $rc: $(grep -m1 '^FAIL' "$out" || tail -n 3 "$out")"
    grep -q '^PASS: import_context$' "$out" || fail "$label: import_context printed no PASS line"
    ok "$label: $(grep -c '^ok ' "$out") checks passed"
    emu_expect_no_context_session 1 "import_context ($label)"
    ok "$label: no session left behind"
}

run_import emulated
run_import mixed RDMAEMU_MODE=mixed RDMAEMU_REAL_LIBIBVERBS="$STANDIN"
