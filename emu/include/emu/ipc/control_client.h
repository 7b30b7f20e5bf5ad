// The client end of a control session: blocking request/reply calls, no exceptions, so that
// both libibverbs (inside any app) and the rdmaemu tool can use it.
#pragma once

#include "emu/ipc/protocol.h"
#include "emu/ipc/socket_io.h"

#include <cstring>
#include <mutex>
#include <string>
#include <sys/types.h>

namespace emu::ipc {

class ControlClient {
  public:
    ControlClient() = default;
    ControlClient(const ControlClient&) = delete;
    ControlClient& operator=(const ControlClient&) = delete;
    ~ControlClient();

    // Connects to the daemon's socket. Returns 0 or a positive errno.
    int connect(const std::string& path);
    // Takes `fd`, a socket already connected to the daemon (a session another process opened).
    void adopt(int fd);
    int fd() const { return fd_; }
    void close();
    // From now on, the first request each process makes hands the NIC that process's memory
    // (its /proc/self/mem, see protocol.h): a device context's session.
    void share_memory() { share_memory_ = true; }

    // One request/reply. Returns the verb's result: 0 or a positive errno (a broken session
    // reports EIO). `fds`, when given, receives the descriptors sent with a successful reply
    // (the caller owns them); otherwise they are closed.
    // `send`: a descriptor that goes with the request (-1: none).
    template <Op op>
    int call(const typename Types<op>::Req& req, typename Types<op>::Reply& reply,
             PassedFds* fds = nullptr, int send = -1) {
        return call_raw(op, &req, body_size<typename Types<op>::Req>(), &reply,
                        body_size<typename Types<op>::Reply>(), nullptr, fds, send);
    }
    template <Op op> int call(const typename Types<op>::Req& req) {
        typename Types<op>::Reply reply{};
        return call<op>(req, reply);
    }

    // A request whose reply body is text of any length (Status).
    int call_text(Op op, std::string& text);

    // Called for each refused request, with the id of the reason the NIC gave (in the session's
    // reason ring, reasons.h; 0: none), on the calling thread before the call returns.
    using RefusalObserver = void (*)(void* context, Op op, int err, uint32_t reason);
    void observe_refusals(RefusalObserver observer, void* context) {
        observer_ = observer;
        observer_context_ = context;
    }

  private:
    int call_raw(Op op, const void* req, size_t req_len, void* reply, size_t reply_len,
                 std::string* text, PassedFds* fds, int send = -1);

    // Attaches this process's /proc/self/mem to the request when this process has not sent it
    // yet; returns the descriptor to close once sent, or -1.
    int memory_to_send();

    int fd_ = -1;
    uint32_t seq_ = 0;
    bool share_memory_ = false;
    pid_t memory_sent_by_ = 0; // the process that last handed over its memory (fork copies it)
    RefusalObserver observer_ = nullptr;
    void* observer_context_ = nullptr;
    std::mutex mutex_; // one call at a time: apps may call verbs from many threads
};

} // namespace emu::ipc
