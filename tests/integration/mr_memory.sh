#!/usr/bin/env bash
# mr_memory: RDMA into MRs on heap, .bss, .data, stack, a mapped file, huge pages, two MRs on one
# page, rereg, fork() with and without ibv_fork_init, memory unmapped while registered, checked
# byte for byte (mr_memory.c); then `rdmaemu status --json` must show each MR with the engine the
# program expects (shared pages "mapped", the rest "process").
#
# usage: mr_memory.sh RDMAEMU MR_MEMORY
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PROG=$2
emu_setup "$1"
emu_reserve_huge_pages 2 "the huge-page MR"
emu_up 1
mkfifo "$EMU_WORK/go"
exec 7<>"$EMU_WORK/go"

emu_run 1 -- "$PROG" "$EMU_WORK/state" <&7 >"$EMU_WORK/out.log" 2>&1 &
pid=$!
emu_bg_register "$pid"
for _ in $(seq 300); do
    grep -qE '^(ready|FAIL)' "$EMU_WORK/out.log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
cat "$EMU_WORK/out.log"
grep -q '^ready' "$EMU_WORK/out.log" || fail "mr_memory failed (see above)"

step "each MR's engine, as rdmaemu status shows it"
emu_status >/dev/null
python3 - "$EMU_WORK/state" "$EMU_WORK/status.json" <<'PY' || fail "an MR is served by another engine than expected"
import json, sys
want = [l.split() for l in open(sys.argv[1]) if l.strip()]
doc = json.load(open(sys.argv[2]))
mrs = {m["addr"]: m for h in doc["hosts"] for s in h.get("sessions", []) for m in s.get("mrs", [])}
bad = 0
for name, addr, engine in want:
    m = mrs.get(int(addr))
    got = m["engine"] if m else "missing"
    print(f"{'ok  ' if got == engine else 'FAIL'} {name}: {got}" + (f", {m['shared_bytes']} bytes shared" if m else ""))
    bad += got != engine
sys.exit(1 if bad else 0)
PY
echo done >&7
wait "$pid" || fail "mr_memory exited with an error"
ok "every MR on its expected engine"
