#include "session.h"

#include "dispatch.h"
#include "emu/ipc/message_check.h"
#include "emu/ipc/socket_io.h"

#include <boost/asio/error.hpp>

#include <cstring>
#include <fstream>
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
    : sock_(io, sock), nic_(nic), log_(log), status_(std::move(status)),
      on_end_(std::move(on_end)), id_(nic.next_session_id()) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) pid_ = cred.pid;
    comm_ = read_comm(pid_);
    prefix_ = "session#" + std::to_string(id_);
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
    int fd = -1;
    ssize_t n = ipc::recv_message(sock_.native_handle(), buf, sizeof buf, &fd);
    if (fd >= 0) ::close(fd); // clients never pass descriptors to the NIC
    if (n == -EAGAIN) return wait_readable();
    if (n == -EMSGSIZE) return end("protocol error: oversized message");
    if (n < 0) return end(std::string("receive failed: ") + std::strerror(static_cast<int>(-n)));
    if (n == 0) return end("closed by client");
    handle_request(buf, static_cast<size_t>(n));
    if (!ended_) wait_readable();
}

void Session::handle_request(const char* msg, size_t len) {
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
        return send_reply(h, 0, text.data(), text.size(), -1);
    }
    if (!context_) return end(std::string("protocol error: ") + ipc::op_name(op) +
                              " on a session that opened no device context");
    dispatch_verb(*this, h, body);
}

void Session::hello(const ipc::Header& h, const ipc::HelloReq& req) {
    greeted_ = true;
    ipc::HelloReply reply{};
    const Device& dev = nic_.device();
    std::strncpy(reply.dev_name, dev.name().c_str(), sizeof reply.dev_name - 1);
    reply.node_guid = dev.node_guid();
    reply.session_id = id_;
    reply.node_type = IBV_NODE_CA;
    reply.transport_type = IBV_TRANSPORT_IB;
    int pass_fd = -1;
    if (req.flags & ipc::kHelloContext) {
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0)
            return send_reply(h, errno, nullptr, 0, -1);
        async_end_.reset(fds[0]);
        pass_fd = fds[1];
        context_ = true;
        log_.info("{} opened {} for pid {} ({})", prefix_, dev.name(), pid_, comm_);
    }
    send_reply(h, 0, &reply, sizeof reply, pass_fd);
}

void Session::send_reply(const ipc::Header& req, int err, const void* body, size_t len,
                         int pass_fd) {
    std::string out(sizeof(ipc::ReplyHeader) + len, '\0');
    ipc::ReplyHeader rh{};
    rh.hdr = req;
    rh.hdr.length = static_cast<uint32_t>(out.size());
    rh.err = err;
    std::memcpy(out.data(), &rh, sizeof rh);
    if (len) std::memcpy(out.data() + sizeof rh, body, len);
    int rc = ipc::send_message(sock_.native_handle(), out.data(), out.size(), pass_fd);
    if (pass_fd >= 0) ::close(pass_fd); // the client has its own copy now
    if (err) log_.debug("{} {} failed: {}", prefix_, ipc::op_name(static_cast<ipc::Op>(req.op)),
                        std::strerror(err));
    if (rc) end(std::string("reply failed: ") + std::strerror(rc));
}

void Session::end(const std::string& why) {
    if (ended_) return;
    ended_ = true;
    size_t owned = objects_.count();
    objects_.destroy_all(nic_);
    if (why.rfind("protocol error", 0) == 0)
        log_.warn("{} (pid {} {}) ended: {}; freed {} objects", prefix_, pid_, comm_, why, owned);
    else if (context_ || owned)
        log_.info("{} (pid {} {}) ended: {}; freed {} objects", prefix_, pid_, comm_, why, owned);
    boost::system::error_code ignored;
    sock_.close(ignored);
    async_end_.reset();
    on_end_(*this);
}

} // namespace nicsim
