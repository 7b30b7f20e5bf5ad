// Opening and closing a device: one control session with the host's NIC per context.
#include "emu_objects.h"
#include "emulated_verbs.h"
#include "ops.h"

#include <cerrno>
#include <new>
#include <sys/prctl.h>
#include <unistd.h>

using namespace verbs;
namespace ipc = emu::ipc;

namespace {

void install_ops(EmuContext& c) {
    ibv_context_ops& ops = c.vctx.context.ops;
    ops.poll_cq = verbs::poll_cq;
    ops.req_notify_cq = verbs::req_notify_cq;
    ops.post_send = verbs::post_send;
    ops.post_recv = verbs::post_recv;
    ops.post_srq_recv = verbs::post_srq_recv;
    ops.alloc_mw = verbs::alloc_mw;
    ops.dealloc_mw = verbs::dealloc_mw;
    ops.bind_mw = verbs::bind_mw;
    c.vctx.query_port = verbs::query_port;
    c.vctx.query_device_ex = verbs::query_device_ex;
    c.vctx.create_cq_ex = verbs::create_cq_ex;
    c.vctx.create_qp_ex = verbs::create_qp_ex;
    c.vctx.advise_mr = verbs::advise_mr;
    c.vctx.alloc_dm = verbs::alloc_dm;
    c.vctx.free_dm = verbs::free_dm;
    c.vctx.reg_dm_mr = verbs::reg_dm_mr;
    c.vctx.alloc_td = verbs::alloc_td;
    c.vctx.dealloc_td = verbs::dealloc_td;
    c.vctx.alloc_parent_domain = verbs::alloc_parent_domain;
    c.vctx.query_rt_values = verbs::query_rt_values_ex;
    c.vctx.ibv_create_flow = verbs::create_flow;
    c.vctx.ibv_destroy_flow = verbs::destroy_flow;
    c.vctx.create_wq = verbs::create_wq;
    c.vctx.modify_wq = verbs::modify_wq;
    c.vctx.destroy_wq = verbs::destroy_wq;
    c.vctx.create_rwq_ind_table = verbs::create_rwq_ind_table;
    c.vctx.destroy_rwq_ind_table = verbs::destroy_rwq_ind_table;
    c.vctx.open_xrcd = verbs::open_xrcd;
    c.vctx.close_xrcd = verbs::close_xrcd;
    c.vctx.create_srq_ex = verbs::create_srq_ex;
    c.vctx.get_srq_num = verbs::get_srq_num;
    c.vctx.post_srq_ops = verbs::post_srq_ops;
    c.vctx.open_qp = verbs::open_qp;
}

} // namespace

ibv_context* emulated::ibv_open_device(ibv_device* device) {
    EmuDevice* dev = emu_device(device);
    auto* c = new (std::nothrow) EmuContext();
    if (!c) return fail<ibv_context>(ENOMEM);
    int err = c->control.connect(dev->socket_path);
    if (err) {
        delete c;
        // The host went away since the device list was read.
        return fail<ibv_context>(err == ENOENT || err == ECONNREFUSED ? ENODEV : err);
    }
    ipc::HelloReply hello{};
    ipc::PassedFds fds;
    err = c->control.call<ipc::Op::Hello>({ipc::kHelloContext, 0}, hello, &fds);
    if (!err && fds.count != 3) err = EIO;
    if (!err) err = c->doorbell_page.map(fds.fd[2], ipc::kDoorbellPageSize);
    if (err) {
        if (fds.count > 2) fds.fd[2] = -1; // map() closed it
        fds.close_all();
        delete c;
        return fail<ibv_context>(err);
    }
    int async_fd = fds.fd[0];
    c->doorbell_fd = fds.fd[1];
    // The NIC reads and writes our registered memory with process_vm_readv/writev; where Yama
    // restricts ptrace to descendants, allow the NIC's process explicitly.
    ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(hello.daemon_pid), 0, 0, 0);
    c->device = dev;
    ibv_context& ctx = c->vctx.context;
    ctx.device = device;
    ctx.cmd_fd = c->control.fd();
    ctx.async_fd = async_fd;
    ctx.num_comp_vectors = 1;
    pthread_mutex_init(&ctx.mutex, nullptr);
    ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
    c->vctx.sz = sizeof(verbs_context);
    install_ops(*c);
    return &ctx;
}

int emulated::ibv_close_device(ibv_context* ctx) {
    EmuContext* c = emu_context(ctx);
    // Ending the session makes the NIC free everything this context still owns.
    c->control.close();
    ::close(ctx->async_fd);
    ::close(c->doorbell_fd);
    pthread_mutex_destroy(&ctx->mutex);
    delete c;
    return 0;
}

// Not supported: importing needs a context fd shared by another process's kernel uverbs.
ibv_context* emulated::ibv_import_device(int) {
    return fail<ibv_context>(EOPNOTSUPP);
}
