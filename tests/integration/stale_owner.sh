#!/usr/bin/env bash
# stale_owner: a process registers memory, forks a child that keeps the session (and the MRs)
# alive, and exits. Its pid is then given to a "victim" process (forced through ns_last_pid, as
# root) that maps the same address with a secret. The child's RDMA READs and WRITEs of the dead
# owner's MRs must never see or touch the secret: through the owner's memory they fail, through
# the page it shared with the NIC they reach that page; the victim's page stays intact. The NIC
# reaches memory through what its owner handed over, never by pid.
#
# usage: stale_owner.sh RDMAEMU STALE_OWNER
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SO=$2
if [[ $(id -u) != 0 ]]; then
    echo "SKIP: forcing a pid through /proc/sys/kernel/ns_last_pid needs root"
    exit 77
fi
emu_setup "$1"
emu_up 1

mkfifo "$EMU_WORK/go" "$EMU_WORK/check"
exec 7<>"$EMU_WORK/go" 8<>"$EMU_WORK/check"

step "the owner registers its memory, forks a child that keeps the session, and exits"
emu_run 1 -- "$SO" owner "$EMU_WORK/owner.pid" <&7 >"$EMU_WORK/owner.log" 2>&1 &
job=$!
wait "$job" || { cat "$EMU_WORK/owner.log"; fail "the owner failed"; }
owner=$(cat "$EMU_WORK/owner.pid")
emu_bg_register "$(cat "$EMU_WORK/owner.pid.child")"
grep -q "^ok  *child: READ of the owner's MR while the owner lives" "$EMU_WORK/owner.log" ||
    { cat "$EMU_WORK/owner.log"; fail "the child's READ while the owner lived did not succeed"; }
ok "owner pid $owner exited (reaped); its child holds the session"

step "a victim process gets pid $owner and maps the same address with a secret"
victim=
for try in $(seq 50); do
    rm -f "$EMU_WORK/victim.ready"
    echo $((owner - 1)) >/proc/sys/kernel/ns_last_pid # no other process may start until the fork
    (exec "$SO" victim "$EMU_WORK/victim.ready") <&8 >"$EMU_WORK/victim.log" 2>&1 &
    v=$!
    if [[ $v == "$owner" ]]; then
        victim=$v
        break
    fi
    kill -KILL "$v" 2>/dev/null || true
    wait "$v" 2>/dev/null || true
done
[[ -n $victim ]] || fail "could not give pid $owner to the victim in 50 tries"
emu_bg_register "$victim"
wait_for_file "$EMU_WORK/victim.ready" 10 "$victim" ||
    { cat "$EMU_WORK/victim.log"; fail "the victim did not map its secret"; }
ok "victim has pid $victim (the dead owner's) and its secret at the owner's address"

step "the child READs and WRITEs the dead owner's MR"
echo go >&7
for _ in $(seq 300); do
    grep -q '^done$' "$EMU_WORK/owner.log" && break
    grep -q '^FAIL' "$EMU_WORK/owner.log" && break
    sleep 0.1
done
cat "$EMU_WORK/owner.log"
grep -q '^FAIL' "$EMU_WORK/owner.log" && fail "the child reached memory it must not (see above)"
grep -q '^done$' "$EMU_WORK/owner.log" || fail "the child did not finish within 30 s"

step "the victim's page"
echo check >&8
wait "$victim" || { cat "$EMU_WORK/victim.log"; fail "the victim's secret page was changed"; }
cat "$EMU_WORK/victim.log"
ok "nothing of pid $victim was read or written"
