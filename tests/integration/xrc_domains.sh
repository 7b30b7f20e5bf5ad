#!/usr/bin/env bash
# xrc_domains: XRC domains end to end through the library and the NIC (xrc_domains.py, with
# pyverbs): one domain opened through a file by two contexts, a SEND placed in the XRC SRQ it
# names, the domain check (an SRQ of another domain: IBV_WC_REM_INV_REQ_ERR at the sender), and
# the errno of ibv_open_xrcd. Runs on host 1 (its QPs talk to each other).
# usage: xrc_domains.sh RDMAEMU
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
emu_setup "$1"
/usr/bin/python3 -c 'import pyverbs.xrcd' 2>/dev/null || fail "pyverbs not found (package python3-pyverbs)"
emu_up 1
rc=0
PYTHONWARNINGS=ignore timeout 60 "$RDMAEMU" run --host 1 -- \
    /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/xrc_domains.py" >"$EMU_WORK/xrc.out" 2>&1 || rc=$?
cat "$EMU_WORK/xrc.out"
((rc == 0)) || fail "xrc_domains.py exited $rc"
ok "XRC domains, SRQs and QPs across contexts"
