// Tracing of the verbs that <infiniband/verbs.h> implements inline through the extended
// context (struct verbs_context): ibv_query_port, ibv_create_qp_ex, ibv_create_cq_ex,
// ibv_open_xrcd, ibv_alloc_dm, ... never pass through an exported function, so in trace mode
// their entries are replaced by wrappers that trace the call like any other verb and then call
// the backend's own function (emulated or the real provider's).
#include "trace/trace.h"

#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace verbs::trace {
namespace {

std::shared_mutex saved_mutex;
std::map<const ibv_context*, verbs_context> saved; // the backend's own entries, by context

// The context each op's first argument belongs to.
const ibv_context* context_of(const ibv_context* c) {
    return c;
}
const ibv_context* context_of(const ibv_pd* pd) {
    return pd->context;
}
const ibv_context* context_of(const ibv_cq* cq) {
    return cq->context;
}
const ibv_context* context_of(const ibv_qp* qp) {
    return qp->context;
}
const ibv_context* context_of(const ibv_srq* srq) {
    return srq->context;
}
const ibv_context* context_of(const ibv_xrcd* x) {
    return x->context;
}
const ibv_context* context_of(const ibv_td* td) {
    return td->context;
}
const ibv_context* context_of(const ibv_dm* dm) {
    return dm->context;
}
const ibv_context* context_of(const ibv_wq* wq) {
    return wq->context;
}
const ibv_context* context_of(const ibv_rwq_ind_table* t) {
    return t->context;
}
const ibv_context* context_of(const ibv_flow* f) {
    return f->context;
}
const ibv_context* context_of(const ibv_counters* c) {
    return c->context;
}

// Objects whose own ops are traced too: QPs with the new post-send API, extended CQs.
template <typename R, typename... A> void watch_created(R, A...) {}
void watch_created(ibv_qp* qp, ibv_qp_init_attr_ex* attr) {
    if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) watch_send_ops(qp);
}
void watch_created(ibv_cq_ex* cq, ibv_cq_init_attr_ex* attr) {
    watch_cq_ex(cq, attr->wc_flags);
}

template <auto Member> struct Traced;

template <typename R, typename First, typename... A, R (*verbs_context::*Member)(First, A...)>
struct Traced<Member> {
    static inline const char* name = "";

    static R call(First first, A... args) {
        R (*backend)(First, A...) = nullptr;
        {
            std::shared_lock lock(saved_mutex);
            auto it = saved.find(context_of(first));
            if (it != saved.end()) backend = it->second.*Member;
        }
        Nesting nesting;
        bool traced = nesting.outermost();
        std::string text = traced ? call_text(name, first, args...) : std::string();
        R result = backend(first, args...);
        if (traced) verb(std::move(text), result);
        if (result) watch_created(result, args...);
        return result;
    }
};

// Whether `vctx` has the op at all: it may predate it (rdma-core's verbs_get_ctx_op test).
template <auto Member> bool present(const verbs_context& vctx) {
    size_t offset = reinterpret_cast<size_t>(&(static_cast<verbs_context*>(nullptr)->*Member));
    return vctx.sz >= sizeof(verbs_context) - offset && vctx.*Member;
}

template <auto Member> void wrap(verbs_context& vctx, const char* name) {
    if (!present<Member>(vctx)) return;
    Traced<Member>::name = name;
    vctx.*Member = &Traced<Member>::call;
}

} // namespace

void watch_extended_ops(ibv_context* ctx) {
    verbs_context* vctx = verbs_get_ctx(ctx);
    if (!vctx) return;
    {
        std::unique_lock lock(saved_mutex);
        saved[ctx] = *vctx;
    }
    wrap<&verbs_context::query_port>(*vctx, "ibv_query_port");
    wrap<&verbs_context::query_device_ex>(*vctx, "ibv_query_device_ex");
    wrap<&verbs_context::query_rt_values>(*vctx, "ibv_query_rt_values_ex");
    wrap<&verbs_context::create_cq_ex>(*vctx, "ibv_create_cq_ex");
    wrap<&verbs_context::modify_cq>(*vctx, "ibv_modify_cq");
    wrap<&verbs_context::create_qp_ex>(*vctx, "ibv_create_qp_ex");
    wrap<&verbs_context::open_qp>(*vctx, "ibv_open_qp");
    wrap<&verbs_context::create_srq_ex>(*vctx, "ibv_create_srq_ex");
    wrap<&verbs_context::get_srq_num>(*vctx, "ibv_get_srq_num");
    wrap<&verbs_context::post_srq_ops>(*vctx, "ibv_post_srq_ops");
    wrap<&verbs_context::open_xrcd>(*vctx, "ibv_open_xrcd");
    wrap<&verbs_context::close_xrcd>(*vctx, "ibv_close_xrcd");
    wrap<&verbs_context::alloc_td>(*vctx, "ibv_alloc_td");
    wrap<&verbs_context::dealloc_td>(*vctx, "ibv_dealloc_td");
    wrap<&verbs_context::alloc_parent_domain>(*vctx, "ibv_alloc_parent_domain");
    wrap<&verbs_context::alloc_dm>(*vctx, "ibv_alloc_dm");
    wrap<&verbs_context::free_dm>(*vctx, "ibv_free_dm");
    wrap<&verbs_context::reg_dm_mr>(*vctx, "ibv_reg_dm_mr");
    wrap<&verbs_context::advise_mr>(*vctx, "ibv_advise_mr");
    wrap<&verbs_context::create_wq>(*vctx, "ibv_create_wq");
    wrap<&verbs_context::modify_wq>(*vctx, "ibv_modify_wq");
    wrap<&verbs_context::destroy_wq>(*vctx, "ibv_destroy_wq");
    wrap<&verbs_context::create_rwq_ind_table>(*vctx, "ibv_create_rwq_ind_table");
    wrap<&verbs_context::destroy_rwq_ind_table>(*vctx, "ibv_destroy_rwq_ind_table");
    wrap<&verbs_context::ibv_create_flow>(*vctx, "ibv_create_flow");
    wrap<&verbs_context::ibv_destroy_flow>(*vctx, "ibv_destroy_flow");
    wrap<&verbs_context::create_counters>(*vctx, "ibv_create_counters");
    wrap<&verbs_context::destroy_counters>(*vctx, "ibv_destroy_counters");
}

void forget_extended_ops(ibv_context* ctx) {
    std::unique_lock lock(saved_mutex);
    auto it = saved.find(ctx);
    if (it == saved.end()) return;
    verbs_context* vctx = verbs_get_ctx(ctx);
    // Put the backend's own entries back (the ibv_context inside is left as it is now).
    std::memcpy(static_cast<void*>(vctx), &it->second, offsetof(verbs_context, context));
    saved.erase(it);
}

} // namespace verbs::trace
