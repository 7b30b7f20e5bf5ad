// Opening, importing and closing a device context: each opened context starts a control
// session with the host's NIC, and an imported one shares the session it was made from.
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"
#include "backends/emulated/ops.h"
#include "emu/ipc/reasons.h"
#include "emu/paths.h"
#include "explain/explain.h"
#include "route.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <mutex>
#include <new>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

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

// The sessions this process has open, by their socket's identity: what ibv_import_device looks
// a command fd up by (a dup() of it is the same socket).
struct OpenSession {
    dev_t dev;
    ino_t ino;
    std::weak_ptr<EmuSession> session;
};
std::mutex open_sessions_mutex;
std::vector<OpenSession> open_sessions;

bool socket_identity(int fd, dev_t& dev, ino_t& ino) {
    struct stat st {};
    if (::fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) return false;
    dev = st.st_dev;
    ino = st.st_ino;
    return true;
}

std::shared_ptr<EmuSession> find_session(int fd) {
    dev_t dev;
    ino_t ino;
    if (!socket_identity(fd, dev, ino)) return nullptr;
    std::lock_guard lock(open_sessions_mutex);
    std::erase_if(open_sessions, [](const OpenSession& o) { return o.session.expired(); });
    for (const OpenSession& o : open_sessions)
        if (o.dev == dev && o.ino == ino) return o.session.lock();
    return nullptr;
}

void remember(const std::shared_ptr<EmuSession>& s, int fd) {
    dev_t dev;
    ino_t ino;
    if (!socket_identity(fd, dev, ino)) return;
    std::lock_guard lock(open_sessions_mutex);
    open_sessions.push_back({dev, ino, s});
}

// The socket path of the emulated host this process sees, when fd is connected to it; else "".
std::string host_socket_path(int fd) {
    sockaddr_un peer{};
    socklen_t len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) < 0 ||
        peer.sun_family != AF_UNIX || len <= offsetof(sockaddr_un, sun_path))
        return {};
    size_t n = ::strnlen(peer.sun_path, len - offsetof(sockaddr_un, sun_path));
    std::string path(peer.sun_path, n);
    return path == emu::selected_socket_path() ? path : std::string();
}

void explain_refusal(void* session, ipc::Op op, int err, uint32_t reason) {
    explain::refused_by_nic(*static_cast<EmuSession*>(session), op, err, reason);
}

// Takes a context's descriptors from Hello's or ReopenContext's reply. 0 or errno.
int take_context_fds(EmuSession& s, ipc::PassedFds& fds) {
    int err = fds.count == 3 ? s.doorbell_page.map(fds.fd[2], ipc::kSessionMemoryBytes) : EIO;
    if (err) {
        if (fds.count > 2) fds.fd[2] = -1; // map() closed it
        fds.close_all();
        return err;
    }
    s.async_fd = fds.fd[0];
    s.doorbell_fd = fds.fd[1];
    if (explain::wanted()) s.control.observe_refusals(explain_refusal, &s);
    s.reasons_seen = emu::ipc::reason_ring(s.doorbell_page.data)->last.load();
    return 0;
}

// Opens a session with the host's NIC as a device context. 0 or errno.
int open_session(EmuDevice& dev, EmuSession& s) {
    int err = s.control.connect(dev.socket_path);
    // The host went away since the device list was read.
    if (err) return err == ENOENT || err == ECONNREFUSED ? ENODEV : err;
    ipc::HelloReply hello{};
    ipc::PassedFds fds;
    s.control.share_memory();
    err = s.control.call<ipc::Op::Hello>({ipc::kHelloContext, 0}, hello, &fds);
    if (!err) err = take_context_fds(s, fds);
    if (err) return err;
    s.device = &dev;
    return 0;
}

// Joins the session another process opened, whose socket cmd_fd is (it passed it on): requests
// go over a dup of it (a process lock keeps each request with its reply, control_client.cpp),
// and the NIC hands out the context's descriptors again. 0 or errno.
int join_session(int cmd_fd, const std::string& path, EmuSession& s) {
    int fd = ::fcntl(cmd_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return errno;
    s.control.adopt(fd);
    s.control.share_memory();
    ipc::HelloReply hello{};
    ipc::PassedFds fds;
    int err = s.control.call<ipc::Op::ReopenContext>({}, hello, &fds);
    if (!err) err = take_context_fds(s, fds);
    if (err) return err;
    s.device = emulated_device(path, hello);
    return 0;
}

// A context on `s`; cmd_fd is the fd the app sees as the context's command fd.
ibv_context* new_context(std::shared_ptr<EmuSession> s, int cmd_fd) {
    auto* c = new (std::nothrow) EmuContext();
    if (!c) return fail<ibv_context>(ENOMEM);
    // Each context closes its own async fd; all read the session's one event stream.
    int async_fd = ::fcntl(s->async_fd, F_DUPFD_CLOEXEC, 0);
    if (async_fd < 0) {
        int err = errno;
        delete c;
        return fail<ibv_context>(err);
    }
    c->session = std::move(s);
    ibv_context& ctx = c->vctx.context;
    ctx.device = &c->session->device->device;
    ctx.cmd_fd = cmd_fd;
    ctx.async_fd = async_fd;
    ctx.num_comp_vectors = 1;
    pthread_mutex_init(&ctx.mutex, nullptr);
    ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
    c->vctx.sz = sizeof(verbs_context);
    install_ops(*c);
    return &ctx;
}

} // namespace

namespace verbs {

EmuSession::~EmuSession() {
    control.close();
    if (async_fd >= 0) ::close(async_fd);
    if (doorbell_fd >= 0) ::close(doorbell_fd);
}

bool is_emulated_command_fd(int fd) {
    return find_session(fd) != nullptr || !host_socket_path(fd).empty();
}

bool shares_objects(ibv_context* ctx, ibv_context* other) {
    if (other == ctx) return true;
    if (!other || !is_emulated_device(other->device)) return false; // a real device's context
    return emu_context(other)->session == emu_context(ctx)->session;
}

} // namespace verbs

ibv_context* emulated::ibv_open_device(ibv_device* device) {
    auto s = std::make_shared<EmuSession>();
    if (int err = open_session(*emu_device(device), *s)) return fail<ibv_context>(err);
    int cmd_fd = s->control.fd();
    remember(s, cmd_fd);
    return new_context(std::move(s), cmd_fd);
}

int emulated::ibv_close_device(ibv_context* ctx) {
    EmuContext* c = emu_context(ctx);
    ::close(ctx->async_fd);
    if (c->own_cmd_fd >= 0) ::close(c->own_cmd_fd);
    pthread_mutex_destroy(&ctx->mutex);
    // The last context of a session ends it, and the NIC frees everything it still owns.
    delete c;
    return 0;
}

// A second context on the session a context's command fd belongs to, as the kernel makes one on
// the uverbs file a dup()ed command fd refers to: shared with the contexts of this process on
// it, or joined when the fd came from another process. Any other fd is EINVAL, as rdma-core
// answers for one that is no device's.
ibv_context* emulated::ibv_import_device(int cmd_fd) {
    std::shared_ptr<EmuSession> s = find_session(cmd_fd);
    if (!s) {
        std::string path = host_socket_path(cmd_fd);
        if (path.empty()) return fail<ibv_context>(EINVAL);
        s = std::make_shared<EmuSession>();
        if (int err = join_session(cmd_fd, path, *s)) return fail<ibv_context>(err);
        remember(s, cmd_fd);
    }
    ibv_context* ctx = new_context(std::move(s), cmd_fd);
    if (ctx) emu_context(ctx)->own_cmd_fd = cmd_fd; // closed by ibv_close_device, as rdma-core
    return ctx;
}
