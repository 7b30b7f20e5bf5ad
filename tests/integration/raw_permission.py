#!/usr/bin/env python3
"""Raw packet QPs need CAP_NET_RAW, as with the kernel (rdma_dev_has_raw_cap): run under
`rdmaemu run --host 1`, with `expect=ok` (the process holds CAP_NET_RAW) it creates one, with
`expect=eperm` (it does not) ibv_create_qp must fail with EPERM, while an RC QP in the same
context is still made. Prints "ok ..." lines; exits non-zero on the first failure.
"""
import errno
import sys

import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPCap, QPInitAttr


def fail(msg):
    print(f"FAIL {msg}")
    sys.exit(1)


def make_qp(pd, cq, qp_type):
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    return QP(pd, QPInitAttr(qp_type=qp_type, scq=cq, rcq=cq, cap=cap))


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("expect=ok", "expect=eperm"):
        fail("usage: raw_permission.py expect=ok|expect=eperm")
    want_ok = sys.argv[1] == "expect=ok"
    with Context(name="emu0") as ctx:
        pd = PD(ctx)
        cq = CQ(ctx, 8)
        make_qp(pd, cq, e.IBV_QPT_RC)
        print("ok an RC QP")
        try:
            make_qp(pd, cq, e.IBV_QPT_RAW_PACKET)
        except PyverbsRDMAError as ex:
            if want_ok:
                fail(f"raw packet QP with CAP_NET_RAW: {ex}")
            if ex.error_code != errno.EPERM:
                fail(f"raw packet QP without CAP_NET_RAW: errno {ex.error_code}, expected EPERM")
            print("ok raw packet QP without CAP_NET_RAW: EPERM")
            return
        if not want_ok:
            fail("raw packet QP without CAP_NET_RAW was created, expected EPERM")
        print("ok raw packet QP with CAP_NET_RAW")


main()
