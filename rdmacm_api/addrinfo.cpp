// rdma_getaddrinfo / rdma_freeaddrinfo and the endpoints made from their answer, rdma_create_ep
// and rdma_destroy_ep, as rdma-core's addrinfo.c and cma.c define them: names go through
// getaddrinfo(3); its answer (a EAI_* code) is rdma_getaddrinfo's.
#include "cm_session.h"
#include "export.h"
#include "ids.h"
#include "untraced.h"

#include <netdb.h>
#include <rdma/rdma_verbs.h>

#include <cstdlib>
#include <cstring>
#include <new>

using namespace rdmacm;

namespace {

addrinfo to_ai_hints(const rdma_addrinfo& rai) {
    addrinfo ai{};
    if (rai.ai_flags & RAI_PASSIVE) ai.ai_flags = AI_PASSIVE;
    if (rai.ai_flags & RAI_NUMERICHOST) ai.ai_flags |= AI_NUMERICHOST;
    if (rai.ai_family != AF_IB) ai.ai_family = rai.ai_family;
    if (rai.ai_qp_type == IBV_QPT_RC || rai.ai_qp_type == IBV_QPT_UC ||
        rai.ai_qp_type == IBV_QPT_XRC_SEND || rai.ai_qp_type == IBV_QPT_XRC_RECV)
        ai.ai_socktype = SOCK_STREAM;
    else if (rai.ai_qp_type == IBV_QPT_UD)
        ai.ai_socktype = SOCK_DGRAM;
    if (rai.ai_port_space == RDMA_PS_TCP)
        ai.ai_protocol = IPPROTO_TCP;
    else if (rai.ai_port_space == RDMA_PS_UDP || rai.ai_port_space == RDMA_PS_IPOIB)
        ai.ai_protocol = IPPROTO_UDP;
    else if (rai.ai_port_space == RDMA_PS_IB)
        ai.ai_protocol = ai.ai_socktype == SOCK_DGRAM    ? IPPROTO_UDP
                         : ai.ai_socktype == SOCK_STREAM ? IPPROTO_TCP
                                                         : 0;
    return ai;
}

int copy_addr(sockaddr*& dst, socklen_t& dst_len, const sockaddr* src, socklen_t src_len) {
    dst = static_cast<sockaddr*>(std::malloc(src_len));
    if (!dst) return fail(ENOMEM);
    std::memcpy(dst, src, src_len);
    dst_len = src_len;
    return 0;
}

char* dup_name(const char* s) {
    return s ? strdup(s) : nullptr;
}

// The first answer of getaddrinfo as rdma_addrinfo: its QP type and port space from the
// socket type and protocol unless the hints name them; passive, it is the source address.
int from_ai(rdma_addrinfo& rai, const rdma_addrinfo& hints, const addrinfo& ai) {
    rai.ai_qp_type = hints.ai_qp_type                ? hints.ai_qp_type
                     : ai.ai_socktype == SOCK_STREAM ? IBV_QPT_RC
                     : ai.ai_socktype == SOCK_DGRAM  ? IBV_QPT_UD
                                                     : 0;
    rai.ai_port_space = hints.ai_port_space             ? hints.ai_port_space
                        : ai.ai_protocol == IPPROTO_TCP ? RDMA_PS_TCP
                        : ai.ai_protocol == IPPROTO_UDP ? RDMA_PS_UDP
                                                        : 0;
    rai.ai_family = ai.ai_family;
    if (ai.ai_flags & AI_PASSIVE) {
        rai.ai_flags = RAI_PASSIVE;
        rai.ai_src_canonname = dup_name(ai.ai_canonname);
        return copy_addr(rai.ai_src_addr, rai.ai_src_len, ai.ai_addr, ai.ai_addrlen);
    }
    rai.ai_dst_canonname = dup_name(ai.ai_canonname);
    return copy_addr(rai.ai_dst_addr, rai.ai_dst_len, ai.ai_addr, ai.ai_addrlen);
}

} // namespace

int untraced_rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints,
                              rdma_addrinfo** res) {
    if (!res || (!service && !node && !hints)) return fail(EINVAL);
    static const rdma_addrinfo no_hints{};
    if (!hints) hints = &no_hints;
    auto* rai = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
    if (!rai) return fail(ENOMEM);
    int ret = 0;
    if (node || service) {
        addrinfo ai_hints = to_ai_hints(*hints);
        addrinfo* ai = nullptr;
        ret = ::getaddrinfo(node, service, hints == &no_hints ? nullptr : &ai_hints, &ai);
        if (ret) {
            std::free(rai);
            return ret;
        }
        ret = from_ai(*rai, *hints, *ai);
        ::freeaddrinfo(ai);
    } else {
        rai->ai_flags = hints->ai_flags;
        rai->ai_family = hints->ai_family;
        rai->ai_qp_type = hints->ai_qp_type;
        rai->ai_port_space = hints->ai_port_space;
        if (hints->ai_dst_len)
            ret =
                copy_addr(rai->ai_dst_addr, rai->ai_dst_len, hints->ai_dst_addr, hints->ai_dst_len);
    }
    if (!ret && !rai->ai_src_len && hints->ai_src_len)
        ret = copy_addr(rai->ai_src_addr, rai->ai_src_len, hints->ai_src_addr, hints->ai_src_len);
    if (ret) {
        rdma_freeaddrinfo(rai);
        return ret;
    }
    *res = rai;
    return 0;
}

void untraced_rdma_freeaddrinfo(rdma_addrinfo* res) {
    while (res) {
        rdma_addrinfo* next = res->ai_next;
        std::free(res->ai_connect);
        std::free(res->ai_route);
        std::free(res->ai_src_canonname);
        std::free(res->ai_dst_canonname);
        std::free(res->ai_src_addr);
        std::free(res->ai_dst_addr);
        std::free(res);
        res = next;
    }
}

int untraced_rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd,
                            ibv_qp_init_attr* qp_init_attr) {
    if (!id || !res) return fail(EINVAL);
    rdma_cm_id* cm_id = nullptr;
    if (create_id(nullptr, &cm_id, nullptr, static_cast<rdma_port_space>(res->ai_port_space),
                  static_cast<ibv_qp_type>(res->ai_qp_type)))
        return -1;
    CmId* p = priv(cm_id);
    int ret = 0;
    if (res->ai_flags & RAI_PASSIVE) {
        // A listener: the QP attributes wait for each request (rdma_get_request).
        ret = rdma_bind_addr(cm_id, res->ai_src_addr);
        if (!ret && pd) cm_id->pd = pd;
        if (!ret && qp_init_attr) {
            p->qp_init_attr = new (std::nothrow) ibv_qp_init_attr(*qp_init_attr);
            if (!p->qp_init_attr)
                ret = fail(ENOMEM);
            else
                p->qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
        }
    } else {
        ret = rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000);
        if (!ret && res->ai_route_len) {
            ret = rdma_set_option(cm_id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, res->ai_route,
                                  res->ai_route_len);
            if (!ret) ret = complete(p);
        } else if (!ret) {
            ret = rdma_resolve_route(cm_id, 2000);
        }
        if (!ret && qp_init_attr) {
            qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
            ret = rdma_create_qp(cm_id, pd, qp_init_attr);
        }
        if (!ret && res->ai_connect_len) {
            const auto* data = static_cast<const uint8_t*>(res->ai_connect);
            p->connect_data.assign(data, data + res->ai_connect_len);
        }
    }
    if (ret) {
        const int err = errno;
        rdma_destroy_ep(cm_id);
        return fail(err);
    }
    *id = cm_id;
    return 0;
}

void untraced_rdma_destroy_ep(rdma_cm_id* id) {
    if (id->qp) rdma_destroy_qp(id);
    if (id->srq) rdma_destroy_srq(id);
    rdma_destroy_id(id);
}
