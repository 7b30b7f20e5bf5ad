#!/usr/bin/env bash
# verbs_log: __verbs_log, where providers write their errors and warnings, logs as rdma-core's
# does: messages up to VERBS_LOG_LEVEL, appended to VERBS_LOG_FILE; nothing without the file or
# the level, and never on stderr.
# usage: verbs_log.sh LIBDIR VERBS_LOG_CHECK
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LIBDIR=$1 PROG=$2
W=$(mktemp -d "${TMPDIR:-/tmp}/rdmaemu-verbs-log.XXXXXX")
trap 'rm -rf "$W"' EXIT

run() {
    env -u VERBS_LOG_LEVEL -u VERBS_LOG_FILE "$@" LD_LIBRARY_PATH="$LIBDIR" "$PROG" \
        >"$W/out" 2>"$W/err" || fail "verbs_log_check exited $?: $(cat "$W/err")"
    grep -qx "logged by $(realpath "$LIBDIR")/libibverbs.so.1" "$W/out" ||
        fail "not logged by our library: $(cat "$W/out")"
    [[ ! -s $W/err ]] || fail "__verbs_log wrote to stderr: $(cat "$W/err")"
}

step "VERBS_LOG_LEVEL=2 with a file: errors and warnings, appended"
echo "before" >"$W/log"
run VERBS_LOG_LEVEL=2 VERBS_LOG_FILE="$W/log"
cat "$W/log"
[[ $(cat "$W/log") == $'before\nlevel 1: error\nlevel 2: warning' ]] ||
    fail "expected the old line, then levels 1 and 2"
ok "levels 1 and 2 appended, 3 and 4 left out"

step "VERBS_LOG_LEVEL=0x4 (strtol base 0): every level"
rm -f "$W/log"
run VERBS_LOG_LEVEL=0x4 VERBS_LOG_FILE="$W/log"
(($(wc -l <"$W/log") == 4)) || fail "expected 4 lines: $(cat "$W/log")"
ok "4 levels"

step "no file, or no level: nothing anywhere"
run VERBS_LOG_LEVEL=4
rm -f "$W/log"
run VERBS_LOG_FILE="$W/log"
[[ ! -e $W/log ]] || fail "the log file was created without VERBS_LOG_LEVEL"
ok "nothing logged without the level or the file"
