#!/usr/bin/env python3
"""XRC domains end to end through the library and the NIC, with pyverbs (run under
`rdmaemu run --host 1`). Three contexts (three control sessions, as three processes would have):

  ctx_srq:  opens the domain through a file (O_CREAT), an XRC SRQ and its CQ
  ctx_tgt:  opens the same file: the same domain; an XRC_RECV QP in it, and one in a private
            domain (fd -1)
  ctx_send: two XRC_SEND QPs, one connected to each XRC_RECV QP (host 1 to itself)

A SEND naming the SRQ through the QP of the shared domain lands in the SRQ and completes on its
CQ with the XRC_RECV QP's number; through the QP of the private domain it is refused (NAK
invalid request): the sender's WR completes with IBV_WC_REM_INV_REQ_ERR. Also: without O_CREAT,
opening the file fails with EAGAIN until a domain exists, then finds it. (EBUSY on closing a
used domain handle is a protocol test: pyverbs closes an XRCD's SRQs and QPs first.) Prints
"ok ..." lines; exits non-zero on the first failure.
"""
import errno
import os
import sys
import tempfile
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttrEx
from pyverbs.srq import SRQ, SrqInitAttrEx
from pyverbs.wr import SGE, RecvWR, SendWR
from pyverbs.xrcd import XRCD, XRCDInitAttr

DEV = "emu0"
PORT = 1
MSG = 100


def fail(msg):
    print(f"FAIL {msg}", flush=True)
    sys.exit(1)


def poll(cq, what, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        n, wcs = cq.poll(1)
        if n:
            return wcs[0]
    fail(f"no completion for {what} within {timeout}s")


def xrcd(ctx, fd, oflags):
    return XRCD(ctx, XRCDInitAttr(e.IBV_XRCD_INIT_ATTR_FD | e.IBV_XRCD_INIT_ATTR_OFLAGS,
                                  oflags, fd))


def route(ctx):
    gid = ctx.query_gid(PORT, 0)
    return AHAttr(port_num=PORT, is_global=1, gr=GlobalRoute(dgid=gid, sgid_index=0))


def connect(ctx, recv_qp, send_qp):
    a = QPAttr()
    a.path_mtu = e.IBV_MTU_1024
    a.ah_attr = route(ctx)
    a.max_dest_rd_atomic = 1
    a.max_rd_atomic = 1
    a.min_rnr_timer = 12
    a.timeout = 14
    a.retry_cnt = 7
    a.rnr_retry = 7
    a.rq_psn = a.sq_psn = 0x42
    a.dest_qp_num = send_qp.qp_num
    recv_qp.to_rts(a)
    a.dest_qp_num = recv_qp.qp_num
    send_qp.to_rts(a)


def main():
    tmp = tempfile.NamedTemporaryFile()
    fd = os.open(tmp.name, os.O_RDONLY)
    ctx_srq, ctx_tgt, ctx_send = Context(name=DEV), Context(name=DEV), Context(name=DEV)

    # Without O_CREAT, a file that names no domain yet: EAGAIN.
    try:
        xrcd(ctx_tgt, fd, 0)
        fail("ibv_open_xrcd without O_CREAT on a fresh file succeeded")
    except PyverbsRDMAError as ex:
        if ex.error_code != errno.EAGAIN:
            fail(f"ibv_open_xrcd without O_CREAT: errno {ex.error_code}, expected EAGAIN")
    shared_srq_side = xrcd(ctx_srq, fd, os.O_CREAT)
    shared_tgt_side = xrcd(ctx_tgt, fd, 0)  # exists now: found without O_CREAT
    private = xrcd(ctx_tgt, -1, os.O_CREAT)
    print("ok   one domain through two contexts by file; EAGAIN without O_CREAT", flush=True)

    pd = PD(ctx_srq)
    cq = CQ(ctx_srq, 16)
    attr = SrqInitAttrEx(max_wr=8)
    attr.srq_type = e.IBV_SRQT_XRC
    attr.pd = pd
    attr.xrcd = shared_srq_side
    attr.cq = cq
    attr.comp_mask = (e.IBV_SRQ_INIT_ATTR_TYPE | e.IBV_SRQ_INIT_ATTR_PD |
                      e.IBV_SRQ_INIT_ATTR_CQ | e.IBV_SRQ_INIT_ATTR_XRCD)
    srq = SRQ(ctx_srq, attr)
    srqn = srq.get_srq_num()
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    for _ in range(4):
        srq.post_recv(RecvWR(num_sge=1, sg=[SGE(mr.buf, 4096, mr.lkey)]))

    init = QPAttr(port_num=PORT)
    init.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE
    tgt_ok = QP(ctx_tgt, QPInitAttrEx(qp_type=e.IBV_QPT_XRC_RECV, comp_mask=e.IBV_QP_INIT_ATTR_XRCD,
                                      xrcd=shared_tgt_side), init)
    tgt_bad = QP(ctx_tgt, QPInitAttrEx(qp_type=e.IBV_QPT_XRC_RECV,
                                       comp_mask=e.IBV_QP_INIT_ATTR_XRCD, xrcd=private), init)

    spd = PD(ctx_send)
    scq = CQ(ctx_send, 16)
    smr = MR(spd, MSG, e.IBV_ACCESS_LOCAL_WRITE)
    smr.write(b"x" * MSG, MSG)
    send_attr = dict(qp_type=e.IBV_QPT_XRC_SEND, comp_mask=e.IBV_QP_INIT_ATTR_PD, pd=spd,
                     scq=scq, sq_sig_all=1, cap=QPCap(max_send_wr=4, max_send_sge=1,
                                                      max_recv_wr=0, max_recv_sge=0))
    init.qp_access_flags = 0
    send_ok = QP(ctx_send, QPInitAttrEx(**send_attr), init)
    send_bad = QP(ctx_send, QPInitAttrEx(**send_attr), init)
    connect(ctx_send, tgt_ok, send_ok)
    connect(ctx_send, tgt_bad, send_bad)

    wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(smr.buf, MSG, smr.lkey)])
    wr.set_qp_type_xrc(srqn)
    send_ok.post_send(wr)
    wc = poll(scq, "the SEND through the shared domain")
    if wc.status != e.IBV_WC_SUCCESS:
        fail(f"SEND through the shared domain: status {wc.status}")
    wc = poll(cq, "the receive in the XRC SRQ")
    if wc.status != e.IBV_WC_SUCCESS or wc.byte_len != MSG or wc.qp_num != tgt_ok.qp_num:
        fail(f"receive: status {wc.status} byte_len {wc.byte_len} qp_num {wc.qp_num:#x}, "
             f"expected 0, {MSG}, {tgt_ok.qp_num:#x}")
    if mr.read(MSG, 0) != b"x" * MSG:
        fail("the received bytes differ")
    print(f"ok   SEND to XRC SRQ {srqn:#x} through XRC_RECV QP {tgt_ok.qp_num:#x} of the shared "
          f"domain: completed on the SRQ's CQ with that QP's number", flush=True)

    send_bad.post_send(wr)
    wc = poll(scq, "the SEND through the private domain")
    if wc.status != e.IBV_WC_REM_INV_REQ_ERR:
        fail(f"SEND naming an SRQ of another domain: status {wc.status}, expected "
             f"IBV_WC_REM_INV_REQ_ERR ({e.IBV_WC_REM_INV_REQ_ERR})")
    n, _ = cq.poll(1)
    if n:
        fail("the refused SEND completed a receive")
    print("ok   SEND naming an SRQ of another domain: IBV_WC_REM_INV_REQ_ERR at the sender",
          flush=True)

    os.close(fd)


if __name__ == "__main__":
    main()
