#include "session.h"
#include "support/app_socket_pair.h"

#include "cm/cm_agent.h"
#include "control/cm_dispatch.h"
#include "control/peer_capabilities.h"
#include "dispatch.h"
#include "emu/ipc/message_check.h"
#include "emu/ipc/socket_io.h"
#include "verbs/verbs.h"

#include <boost/asio/error.hpp>

#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace nicsim {

namespace ipc = emu::ipc;

namespace {

std::string read_comm(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
    std::string comm;
    std::getline(f, comm);
    return comm.empty() ? "?" : comm;
}

} // namespace

Session::Session(boost::asio::io_context& io, Nic& nic, spdlog::logger& log, int sock,
                 std::function<std::string()> status, EndHandler on_end)
    : sock_(io, sock), nic_(nic), log_(log), status_(std::move(status)), on_end_(std::move(on_end)),
      id_(nic.next_session_id()) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
        pid_ = cred.pid;
        objects_.uid = cred.uid;
    }
    comm_ = read_comm(pid_);
    prefix_ = "session#" + std::to_string(id_);
    objects_.label = prefix_ + " pid " + std::to_string(pid_) + " (" + comm_ + ")";
    // Every request then names its sender: after fork() or a command fd passed on, another
    // process may use this session, and the objects it makes live in its memory.
    int on = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
}

void Session::start() {
    log_.debug("{} connected: pid {} ({})", prefix_, pid_, comm_);
    wait_readable();
}

void Session::wait_readable() {
    sock_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                     [self = shared_from_this()](const boost::system::error_code& ec) {
                         if (ec == boost::asio::error::operation_aborted || self->ended_) return;
                         if (ec) return self->end("wait failed: " + ec.message());
                         self->on_readable();
                     });
}

void Session::on_readable() {
    alignas(8) char buf[ipc::kMaxRequest];
    pid_t sender = 0;
    ipc::PassedFds fds;
    ssize_t n = ipc::recv_message(sock_.native_handle(), buf, sizeof buf, &fds, &sender);
    if (n == -EAGAIN) return wait_readable();
    if (n == -EMSGSIZE) return end("protocol error: oversized message");
    if (n < 0) return end(std::string("receive failed: ") + std::strerror(static_cast<int>(-n)));
    if (n == 0) return end("closed by client");
    if (!sender) sender = pid_;
    take_descriptors(sender, fds);
    handle_request(buf, static_cast<size_t>(n), sender);
    request_fds_.clear(); // what the verb did not take
    if (!ended_) wait_readable();
}

// A request's descriptors: first, maybe, its sender's /proc/<pid>/mem, which the NIC reaches
// that process's memory through from then on (emu/ipc/protocol.h); then the verb's own.
void Session::take_descriptors(pid_t sender, ipc::PassedFds& fds) {
    for (size_t i = 0; i < fds.count; ++i) {
        UniqueFd fd(std::exchange(fds.fd[i], -1));
        if (i == 0 && ProcessMemory::check_descriptor(fd.get()) == 0) {
            objects_.memories.bind(sender, std::move(fd));
            log_.debug("{} pid {} ({}) handed over its memory", prefix_, sender, read_comm(sender));
        } else {
            request_fds_.push_back(std::move(fd));
        }
    }
    fds.count = 0;
}

void Session::handle_request(const char* msg, size_t len, pid_t sender) {
    ipc::RequestCheck check = ipc::check_request(msg, len);
    if (check != ipc::RequestCheck::Ok)
        return end(std::string("protocol error: ") + ipc::describe(check) + " (" +
                   std::to_string(len) + " bytes)");
    ipc::Header h;
    std::memcpy(&h, msg, sizeof h);
    const char* body = msg + sizeof h;
    auto op = static_cast<ipc::Op>(h.op);
    log_.trace("{} request {} seq {}", prefix_, ipc::op_name(op), h.seq);
    if (op == ipc::Op::Hello) {
        if (greeted_) return end("protocol error: second Hello");
        ipc::HelloReq req;
        std::memcpy(&req, body, sizeof req);
        return hello(h, req);
    }
    if (!greeted_) return end(std::string("protocol error: ") + ipc::op_name(op) + " before Hello");
    if (op == ipc::Op::Status) {
        std::string text = status_();
        return send_reply(h, 0, text.data(), text.size());
    }
    if (ipc::is_cm_op(h.op)) {
        if (!cm_)
            return end(std::string("protocol error: ") + ipc::op_name(op) +
                       " on a session that is no CM session");
        return cm::dispatch(*this, *nic_.cm(), *cm_, h, body);
    }
    // The device's attributes are no secret of a context's: a probe may ask for them too, as
    // `rdmaemu run` does to write the host's sysfs entries (tools/rdmaemu/host_view.h).
    const bool device_query = op == ipc::Op::QueryDevice || op == ipc::Op::QueryPort ||
                              op == ipc::Op::QueryGid || op == ipc::Op::QueryPkey;
    if (!context_ && !device_query)
        return end(std::string("protocol error: ") + ipc::op_name(op) +
                   " on a session that opened no device context");
    if (op == ipc::Op::ReopenContext) return reopen_context(h, sender);
    dispatch_verb(*this, h, body, sender);
}

ipc::HelloReply Session::hello_reply() const {
    ipc::HelloReply reply{};
    const Device& dev = nic_.device();
    std::strncpy(reply.dev_name, dev.name().c_str(), sizeof reply.dev_name - 1);
    reply.node_guid = dev.node_guid();
    reply.session_id = id_;
    reply.node_type = IBV_NODE_CA;
    reply.transport_type = IBV_TRANSPORT_IB;
    reply.daemon_pid = ::getpid();
    return reply;
}

void Session::hello(const ipc::Header& h, const ipc::HelloReq& req) {
    greeted_ = true;
    ipc::HelloReply reply = hello_reply();
    std::vector<UniqueFd> fds;
    if (req.flags & ipc::kHelloContext) {
        if (nic_.shares().refuses(emu::Share::Context, pid_, log_, prefix_))
            return send_reply(h, EAGAIN, nullptr, 0);
        if (int err = open_context(fds)) return send_reply(h, err, nullptr, 0);
        nic_.shares().charge(emu::Share::Context, pid_);
        log_.info("{} opened {} for pid {} ({})", prefix_, nic_.device().name(), pid_, comm_);
    } else if (req.flags & ipc::kHelloCm) {
        if (!nic_.cm()) return send_reply(h, ENODEV, nullptr, 0);
        cm_ = std::make_unique<cm::CmClient>(id_);
        log_.info("{} opened the CM for pid {} ({})", prefix_, pid_, comm_);
    }
    send_reply(h, 0, &reply, sizeof reply, fds);
}

// The context's descriptors again, for a process that got the session's socket from the one that
// opened it (ibv_import_device): an async-event socket of its own (the events of the objects it
// makes go there), dups of the doorbell eventfd and page.
void Session::reopen_context(const ipc::Header& h, pid_t sender) {
    int async_client = sender == pid_ ? async_client_.get() : joined_async_socket(sender);
    if (async_client < 0) return send_reply(h, errno, nullptr, 0);
    std::vector<UniqueFd> fds;
    for (int fd : {async_client, doorbell_.get(), page_fd_.get()}) {
        fds.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
        if (!fds.back()) return send_reply(h, errno, nullptr, 0);
    }
    ipc::HelloReply reply = hello_reply();
    log_.info("{} context imported by pid {} ({})", prefix_, sender, read_comm(sender));
    send_reply(h, 0, &reply, sizeof reply, fds);
}

// A device context gets the async-event socket, the doorbell eventfd and the session's shared
// memory (the doorbell page, then the reason ring).
int Session::open_context(std::vector<UniqueFd>& fds) {
    AppSocketPair pair;
    if (int err = make_app_socket_pair(pair)) return err;
    objects_.async_fd = pair.nic_end.get();
    async_end_ = std::move(pair.nic_end);
    async_client_.reset(::fcntl(pair.app_end.get(), F_DUPFD_CLOEXEC, 0));
    fds.push_back(std::move(pair.app_end));
    if (!async_client_) return errno;
    doorbell_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!doorbell_) return errno;
    fds.emplace_back(::fcntl(doorbell_.get(), F_DUPFD_CLOEXEC, 0));
    UniqueFd page_fd;
    if (int err = SharedMemory::create("rdmaemu-session", ipc::kSessionMemoryBytes, doorbell_page_,
                                       page_fd))
        return err;
    // Asleep until the NIC's loop says otherwise (without one: always, every post kicks).
    objects_.doorbell_page = static_cast<ipc::DoorbellPage*>(doorbell_page_.data());
    objects_.reasons = ipc::reason_ring(doorbell_page_.data());
    objects_.doorbell_page->nic_sleeping.store(1);
    objects_.doorbell_page->nic_realtime.store(nic_.realtime() ? 1 : 0);
    objects_.doorbell_page->kicker_cpu.store(-1);
    DataPath* dp = nic_.data_path();
    const bool watched = dp && dp->watch_doorbell(objects_, doorbell_.get());
    page_fd_.reset(::fcntl(page_fd.get(), F_DUPFD_CLOEXEC, 0));
    if (!page_fd_) return errno;
    fds.push_back(std::move(page_fd));
    context_ = true;
    net_raw_ = process_has_net_raw(pid_);
    if (!watched) {
        const int kick = ::fcntl(doorbell_.get(), F_DUPFD_CLOEXEC, 0);
        if (kick < 0) return errno;
        doorbell_wait_ =
            std::make_unique<boost::asio::posix::stream_descriptor>(sock_.get_executor(), kick);
        wait_doorbell();
    }
    return 0;
}

// The app's end of process `pid`'s own async-event socket (made on its first ReopenContext),
// or -1 with errno.
int Session::joined_async_socket(pid_t pid) {
    auto it = joined_async_clients_.find(pid);
    if (it != joined_async_clients_.end()) return it->second.get();
    AppSocketPair pair;
    if (make_app_socket_pair(pair)) return -1;
    const int app_fd = pair.app_end.get();
    objects_.joined_async_fds[pid] = std::move(pair.nic_end);
    joined_async_clients_[pid] = std::move(pair.app_end);
    return app_fd;
}

void Session::wait_doorbell() {
    doorbell_wait_->async_wait(
        boost::asio::posix::descriptor_base::wait_read,
        [self = shared_from_this()](const boost::system::error_code& ec) {
            if (ec || self->ended_) return;
            uint64_t kicks;
            while (::read(self->doorbell_wait_->native_handle(), &kicks, sizeof kicks) > 0) {
            }
            if (DataPath* dp = self->nic_.data_path()) dp->doorbell(self->objects_);
            self->wait_doorbell();
        });
}

void Session::send_reply(const ipc::Header& req, int err, const void* body, size_t len,
                         const std::vector<UniqueFd>& fds, uint32_t reason) {
    std::string out(sizeof(ipc::ReplyHeader) + len, '\0');
    ipc::ReplyHeader rh{};
    rh.hdr = req;
    rh.hdr.length = static_cast<uint32_t>(out.size());
    rh.err = err;
    rh.reason = reason;
    std::memcpy(out.data(), &rh, sizeof rh);
    if (len) std::memcpy(out.data() + sizeof rh, body, len);
    int raw[ipc::kMaxPassedFds];
    size_t n = 0;
    for (const UniqueFd& fd : fds)
        if (n < ipc::kMaxPassedFds) raw[n++] = fd.get();
    int rc = ipc::send_message(sock_.native_handle(), out.data(), out.size(), raw, n);
    if (rc) end(std::string("reply failed: ") + std::strerror(rc));
}

void Session::end(const std::string& why) {
    if (ended_) return;
    ended_ = true;
    size_t owned = objects_.count();
    if (DataPath* dp = nic_.data_path(); dp && objects_.doorbell_page)
        dp->unwatch_doorbell(objects_, doorbell_.get());
    free_session_objects(nic_, objects_);
    if (context_) nic_.shares().release(emu::Share::Context, pid_);
    if (cm_) {
        owned += nic_.cm()->id_count();
        nic_.cm()->drop_client(*cm_);
        owned -= nic_.cm()->id_count();
    }
    if (why.rfind("protocol error", 0) == 0)
        log_.warn("{} (pid {} {}) ended: {}; freed {} objects", prefix_, pid_, comm_, why, owned);
    else if (context_ || cm_ || owned)
        log_.info("{} (pid {} {}) ended: {}; freed {} objects", prefix_, pid_, comm_, why, owned);
    boost::system::error_code ignored;
    sock_.close(ignored);
    if (doorbell_wait_) doorbell_wait_->close(ignored);
    doorbell_.reset();
    async_end_.reset();
    async_client_.reset();
    page_fd_.reset();
    objects_.joined_async_fds.clear();
    joined_async_clients_.clear();
    on_end_(*this);
}

} // namespace nicsim
