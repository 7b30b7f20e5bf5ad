// The control protocol's ops, each defined once: the Op enum, the request and reply struct of each
// op (Types), its name, its request length and the NIC's handler tables are all derived from these
// two lists. Adding an op is one line here (and its handler).
//
// X(op, wire value, request struct, reply struct, the NIC's handler)
//
// The wire value is ABI between the library and the daemon: never change or reuse one; a new op
// takes the next free value (protocol.h checks they run 1, 2, ... without a gap). The handler is a
// function of nicsim/verbs/verbs.h for the verbs ops and of nicsim/control/cm_dispatch.cpp for the
// CM ones; nullptr where the session answers the op itself. The structs and handlers are named here
// only: each is looked up where the list is expanded, so the library never sees the handlers.
#pragma once

// The verbs ops (protocol.h's structs).
#define EMU_IPC_VERB_OPS(X)                                                                        \
    X(Hello, 1, HelloReq, HelloReply, nullptr)                                                     \
    X(QueryDevice, 2, Empty, QueryDeviceReply, query_device)                                       \
    X(QueryPort, 3, QueryPortReq, QueryPortReply, query_port)                                      \
    X(QueryGid, 4, QueryGidReq, QueryGidReply, query_gid)                                          \
    X(QueryPkey, 5, QueryPkeyReq, QueryPkeyReply, query_pkey)                                      \
    X(AllocPd, 6, Empty, HandleReply, alloc_pd)                                                    \
    X(DeallocPd, 7, HandleReq, Empty, dealloc_pd)                                                  \
    X(RegMr, 8, RegMrReq, RegMrReply, reg_mr)                                                      \
    X(ReregMr, 9, ReregMrReq, ReregMrReply, rereg_mr)                                              \
    X(DeregMr, 10, HandleReq, Empty, dereg_mr)                                                     \
    X(CreateCompChannel, 11, Empty, HandleReply, create_comp_channel)                              \
    X(DestroyCompChannel, 12, HandleReq, Empty, destroy_comp_channel)                              \
    X(CreateCq, 13, CreateCqReq, CreateCqReply, create_cq)                                         \
    X(ResizeCq, 14, ResizeCqReq, ResizeCqReply, resize_cq)                                         \
    X(DestroyCq, 15, HandleReq, Empty, destroy_cq)                                                 \
    X(CreateQp, 16, CreateQpReq, CreateQpReply, create_qp)                                         \
    X(ModifyQp, 17, ModifyQpReq, Empty, modify_qp)                                                 \
    X(QueryQp, 18, QueryQpReq, QueryQpReply, query_qp)                                             \
    X(DestroyQp, 19, HandleReq, Empty, destroy_qp)                                                 \
    X(CreateSrq, 20, CreateSrqReq, CreateSrqReply, create_srq)                                     \
    X(ModifySrq, 21, ModifySrqReq, Empty, modify_srq)                                              \
    X(QuerySrq, 22, HandleReq, QuerySrqReply, query_srq)                                           \
    X(DestroySrq, 23, HandleReq, Empty, destroy_srq)                                               \
    X(CreateAh, 24, CreateAhReq, HandleReply, create_ah)                                           \
    X(DestroyAh, 25, HandleReq, Empty, destroy_ah)                                                 \
    X(Status, 26, Empty, Empty, nullptr) /* the reply body is JSON text */                         \
    X(AllocDm, 27, AllocDmReq, AllocDmReply, alloc_dm)                                             \
    X(FreeDm, 28, HandleReq, Empty, dealloc_dm)                                                    \
    X(RegDmMr, 29, RegDmMrReq, RegMrReply, reg_dm_mr)                                              \
    X(AllocMw, 30, AllocMwReq, AllocMwReply, alloc_mw)                                             \
    X(DeallocMw, 31, HandleReq, Empty, dealloc_mw)                                                 \
    X(CreateFlow, 32, CreateFlowReq, HandleReply, create_flow)                                     \
    X(DestroyFlow, 33, HandleReq, Empty, destroy_flow)                                             \
    X(CreateWq, 34, CreateWqReq, CreateWqReply, create_wq)                                         \
    X(ModifyWq, 35, ModifyWqReq, Empty, modify_wq)                                                 \
    X(DestroyWq, 36, HandleReq, Empty, destroy_wq)                                                 \
    X(CreateRwqIndTable, 37, CreateRwqIndTableReq, CreateRwqIndTableReply, create_rwq_ind_table)   \
    X(DestroyRwqIndTable, 38, HandleReq, Empty, destroy_rwq_ind_table)                             \
    X(CreateRssQp, 39, CreateRssQpReq, CreateQpReply, create_rss_qp)                               \
    X(OpenXrcd, 40, OpenXrcdReq, HandleReply, open_xrcd)                                           \
    X(CloseXrcd, 41, HandleReq, Empty, close_xrcd)                                                 \
    X(CreateSrqEx, 42, CreateSrqExReq, CreateSrqReply, create_srq_ex)                              \
    X(OpenQp, 43, OpenQpReq, OpenQpReply, open_qp)                                                 \
    X(AttachMcast, 44, McastReq, Empty, attach_mcast)                                              \
    X(DetachMcast, 45, McastReq, Empty, detach_mcast)                                              \
    X(SrqOps, 46, SrqOpReq, SrqOpReply, srq_ops)                                                   \
    X(ImportObject, 47, ImportObjectReq, ImportObjectReply, import_object)                         \
    X(ReopenContext, 48, Empty, HelloReply, nullptr)

// The rdma_cm ops (cm_protocol.h's structs): only on a session opened with kHelloCm.
#define EMU_IPC_CM_OPS(X)                                                                          \
    X(CmCreateChannel, 49, Empty, CmChannelReply, create_channel)                                  \
    X(CmDestroyChannel, 50, CmChannelReq, Empty, destroy_channel)                                  \
    X(CmGetEvent, 51, CmChannelReq, CmEventRecord, get_event)                                      \
    X(CmCreateId, 52, CmCreateIdReq, HandleReply, create_id)                                       \
    X(CmDestroyId, 53, CmIdReq, CmEventsReply, destroy_id)                                         \
    X(CmMigrateId, 54, CmMigrateReq, CmEventsReply, migrate_id)                                    \
    X(CmBindAddr, 55, CmBindReq, CmIdInfo, bind_addr)                                              \
    X(CmResolveAddr, 56, CmResolveAddrReq, Empty, resolve_addr)                                    \
    X(CmResolveRoute, 57, CmResolveRouteReq, Empty, resolve_route)                                 \
    X(CmQueryId, 58, CmIdReq, CmIdInfo, query_id)                                                  \
    X(CmListen, 59, CmListenReq, CmIdInfo, listen)                                                 \
    X(CmConnect, 60, CmConnectReq, Empty, connect)                                                 \
    X(CmAccept, 61, CmConnectReq, Empty, accept)                                                   \
    X(CmReject, 62, CmRejectReq, Empty, reject)                                                    \
    X(CmEstablish, 63, CmIdReq, Empty, establish)                                                  \
    X(CmDisconnect, 64, CmIdReq, Empty, disconnect)                                                \
    X(CmNotify, 65, CmNotifyReq, Empty, notify)                                                    \
    X(CmInitQpAttr, 66, CmInitQpAttrReq, CmInitQpAttrReply, init_qp_attr)                          \
    X(CmSetOption, 67, CmSetOptionReq, Empty, set_option)                                          \
    X(CmJoinMcast, 68, CmJoinMcastReq, HandleReply, join_mcast)                                    \
    X(CmLeaveMcast, 69, CmLeaveMcastReq, CmEventsReply, leave_mcast)

// Every op, verbs and CM.
#define EMU_IPC_OPS(X) EMU_IPC_VERB_OPS(X) EMU_IPC_CM_OPS(X)
