#include "emu/ipc/control_client.h"

#include "emu/ipc/socket_io.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace emu::ipc {
namespace {

// After fork() the children share the session's socket with their parent, as they share the
// uverbs fd on hardware, and may call verbs on the parent's context at the same time. A POSIX
// record lock belongs to one process (threads are the mutex's job), so holding one on the socket
// keeps each request and its reply together; a process that dies holding it releases it.
class ProcessLock {
  public:
    explicit ProcessLock(int fd) : fd_(fd) { set(F_WRLCK, F_SETLKW); }
    ~ProcessLock() { set(F_UNLCK, F_SETLK); }

  private:
    void set(short type, int cmd) {
        struct flock l {};
        l.l_type = type;
        l.l_whence = SEEK_SET;
        while (::fcntl(fd_, cmd, &l) < 0 && errno == EINTR) {
        }
    }
    int fd_;
};

} // namespace

ControlClient::~ControlClient() {
    close();
}

void ControlClient::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

int ControlClient::connect(const std::string& path) {
    close();
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return ENAMETOOLONG;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
        int err = errno;
        ::close(fd);
        return err;
    }
    fd_ = fd;
    return 0;
}

void ControlClient::adopt(int fd) {
    close();
    fd_ = fd;
}

int ControlClient::memory_to_send() {
    if (!share_memory_ || memory_sent_by_ == ::getpid()) return -1;
    return ::open("/proc/self/mem", O_RDWR | O_CLOEXEC);
}

int ControlClient::call_text(Op op, std::string& text) {
    return call_raw(op, nullptr, 0, nullptr, 0, &text, nullptr);
}

int ControlClient::call_raw(Op op, const void* req, size_t req_len, void* reply, size_t reply_len,
                            std::string* text, PassedFds* fds, int send) {
    if (fds) *fds = PassedFds{};
    std::lock_guard lock(mutex_);
    if (fd_ < 0) return EIO;
    ProcessLock process_lock(fd_);
    char out[kMaxRequest];
    Header h{kMagic, kVersion, static_cast<uint16_t>(op),
             static_cast<uint32_t>(sizeof(Header) + req_len), ++seq_};
    std::memcpy(out, &h, sizeof h);
    if (req_len) std::memcpy(out + sizeof h, req, req_len);
    // This process's memory first (protocol.h), then the request's own descriptor.
    int memory = memory_to_send();
    int passed[2];
    size_t npassed = 0;
    if (memory >= 0) passed[npassed++] = memory;
    if (send >= 0) passed[npassed++] = send;
    int sent = send_message(fd_, out, h.length, passed, npassed);
    if (memory >= 0) {
        ::close(memory);
        if (sent == 0) memory_sent_by_ = ::getpid();
    }
    if (sent != 0) return EIO;

    std::vector<char> in(text ? kMaxReply : sizeof(ReplyHeader) + reply_len);
    PassedFds got;
    ssize_t n = recv_message(fd_, in.data(), in.size(), &got);
    if (n < static_cast<ssize_t>(sizeof(ReplyHeader))) {
        got.close_all();
        return EIO;
    }
    ReplyHeader rh;
    std::memcpy(&rh, in.data(), sizeof rh);
    if (rh.hdr.magic != kMagic || rh.hdr.seq != h.seq || rh.hdr.op != h.op ||
        rh.hdr.length != static_cast<uint32_t>(n) || (rh.err != 0 && got.count)) {
        got.close_all();
        return EIO;
    }
    if (rh.err != 0) {
        if (observer_) observer_(observer_context_, op, rh.err, rh.reason);
        return rh.err;
    }
    size_t body = static_cast<size_t>(n) - sizeof rh;
    if (text) {
        text->assign(in.data() + sizeof rh, body);
    } else {
        if (body != reply_len) {
            got.close_all();
            return EIO;
        }
        if (reply_len) std::memcpy(reply, in.data() + sizeof rh, reply_len);
    }
    if (fds)
        *fds = got;
    else
        got.close_all();
    return 0;
}

} // namespace emu::ipc
