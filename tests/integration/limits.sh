#!/usr/bin/env bash
# limits: a host started with --max-per-process gives each process its own share of QPs, CQs,
# MRs and device contexts: one more is refused with EAGAIN and the daemon log names the limit,
# while a second process still gets its whole share. MRs over memory that is not there fail
# with EFAULT (the reason in the verbs log, nothing on stderr).
#
# usage: limits.sh RDMAEMU LIMITS
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PROG=$2
emu_setup "$1"

emu_up 1 --max-per-process qp=4,cq=3,mr=5,context=2
log=$RDMAEMU_RUNTIME_DIR/host1/nicsimd.log

step "process A takes its whole share and holds it; process B gets a whole share too"
hold=$EMU_WORK/hold release=$EMU_WORK/release
"$RDMAEMU" run --host 1 -- "$PROG" --shares 4,3,5,2 --hold-file "$hold" --release-file "$release" \
    >"$EMU_WORK/a.out" 2>&1 &
apid=$!
emu_bg_register "$apid"
wait_for_file "$hold" 30 "$apid" || fail "process A did not take its share: $(cat "$EMU_WORK/a.out")"
cat "$EMU_WORK/a.out"
emu_run 1 -- "$PROG" --shares 4,3,5,2 >"$EMU_WORK/b.out" 2>&1 ||
    fail "process B, while A holds its share: $(cat "$EMU_WORK/b.out")"
cat "$EMU_WORK/b.out"
touch "$release"
wait "$apid" || fail "process A: $(cat "$EMU_WORK/a.out")"
ok "each process got 4 QPs, 3 CQs, 5 MRs and 2 contexts, and EAGAIN beyond"

for what in "4 QPs (--max-per-process qp=4)" "3 CQs (--max-per-process cq=3)" \
    "5 MRs (--max-per-process mr=5)" "2 device contexts (--max-per-process context=2)"; do
    grep -q "holds its share of $what: one more is refused with EAGAIN" "$log" ||
        fail "the daemon log does not name the limit '$what': $(grep -i share "$log" | tail -n 5)"
done
ok "the daemon log names each limit that refused"
emu_expect_no_context_session 1 "both processes"

step "MRs over memory that is not there: EFAULT, the reason in the verbs log"
VERBS_LOG_LEVEL=1 VERBS_LOG_FILE=$EMU_WORK/verbs.log emu_run 1 -- "$PROG" --efault \
    >"$EMU_WORK/efault.out" 2>"$EMU_WORK/efault.err" ||
    fail "limits --efault: $(cat "$EMU_WORK/efault.out" "$EMU_WORK/efault.err")"
cat "$EMU_WORK/efault.out"
[[ ! -s $EMU_WORK/efault.err ]] || fail "something was written on stderr: $(cat "$EMU_WORK/efault.err")"
cat "$EMU_WORK/verbs.log"
grep -q "ibv_reg_mr(addr .*, length 21474836480, access 0x1): EFAULT: the MR's memory at .* is not mapped" \
    "$EMU_WORK/verbs.log" || fail "the verbs log does not say why the 20 GiB MR failed"
grep -q "is mapped without read access" "$EMU_WORK/verbs.log" || fail "no reason for the PROT_NONE page"
grep -q "is mapped read-only while the access writes" "$EMU_WORK/verbs.log" ||
    fail "no reason for the read-only page"
ok "every EFAULT has its reason in the verbs log, stderr stays empty"
