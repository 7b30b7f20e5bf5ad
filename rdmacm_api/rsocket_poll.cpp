// Waiting on rsockets: driving a socket's completions, the sleep of a blocking call, and
// rpoll/rselect over rsockets and ordinary fds together.
//
// A socket sleeps on its completion channel (armed with ibv_req_notify_cq), its CM channel (a
// DISCONNECTED event when the peer vanished without a word) and its wake eventfd. rpoll
// sleeps on those of every rsocket it is given, and on the app's other fds, for at most
// wake_up_interval (500 ms) at a time, then looks again, as rdma-core's rpoll: a completion
// another thread took from under it cannot leave it asleep for good.
#include "rsocket.h"
#include "rsocket_dgram.h"

#include "cm_objects.h"
#include "export.h"
#include "ids.h"

#include <poll.h>
#include <rdma/rsocket.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace rdmacm::rs {

namespace {

uint64_t now_us() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

uint64_t coarse_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

} // namespace

int sys_poll(pollfd* fds, nfds_t n, int timeout_ms) {
    if (timeout_ms < 0) return ::ppoll(fds, n, nullptr, nullptr);
    timespec ts{timeout_ms / 1000, static_cast<long>(timeout_ms % 1000) * 1000000};
    return ::ppoll(fds, n, &ts, nullptr);
}

namespace {

void drain(int fd) {
    uint64_t v;
    while (::read(fd, &v, sizeof v) > 0) {
    }
}

// The fds a socket in this phase sleeps on. The wake eventfd is for the thread sleeping in
// wait_until only: rpoll does not take its wake-ups (nor would two sleepers stop waking each
// other); it looks again every wake_up_interval.
int wait_fds(const RSocket& s, pollfd* out, bool with_wake) {
    switch (s.phase) {
    case Phase::Listening:
    case Phase::ResolvingAddr:
    case Phase::ResolvingRoute:
    case Phase::Connecting:
    case Phase::Accepting:
        out[0] = {s.fd, POLLIN, 0};
        return 1;
    case Phase::Open:
        out[0] = {s.comp->fd, POLLIN, 0};
        out[1] = {s.fd, POLLIN, 0};
        out[2] = {s.wake_fd, POLLIN, 0};
        return with_wake ? 3 : 2;
    default:
        return 0;
    }
}

// What poll() would say of the socket now (rdma-core's rs_poll_rs), with s.mutex held.
short revents_of(RSocket& s, short events) {
    if (opening(s.phase)) drive_connect(s);
    switch (s.phase) {
    case Phase::Listening: {
        pollfd p{s.fd, POLLIN, 0};
        sys_poll(&p, 1, 0);
        return p.revents & POLLIN ? static_cast<short>(events & POLLIN) : 0;
    }
    case Phase::ConnectError:
        return static_cast<short>((events & (POLLIN | POLLOUT)) | POLLERR);
    case Phase::Open: {
        progress(s);
        const StreamFlow& f = *s.flow;
        short r = 0;
        if ((events & POLLIN) && (f.has_data() || !f.readable())) r |= POLLIN;
        if ((events & POLLOUT) && f.can_send()) r |= POLLOUT;
        // Hung up once the data that came before the disconnect is read: rdma-core says so
        // at once, and a program that stops at POLLHUP (rstream -T a) loses the last bytes.
        if (!f.has_data()) {
            if (f.link() == Link::Closed) r |= POLLHUP;
            if (f.link() == Link::Failed) r |= POLLERR;
        }
        return r;
    }
    default:
        return 0;
    }
}

// One look at every entry, without sleeping. The count of entries with events.
int check_all(pollfd* fds, nfds_t nfds) {
    int count = 0;
    for (nfds_t i = 0; i < nfds; ++i) {
        fds[i].revents = 0;
        if (RSocket* s = lookup(fds[i].fd)) {
            std::lock_guard lock(s->mutex);
            fds[i].revents = revents_of(*s, fds[i].events);
        } else if (ds::Socket* d = ds::lookup(fds[i].fd)) {
            fds[i].revents = ds::revents(*d, fds[i].events);
        } else if (fds[i].fd >= 0) {
            sys_poll(&fds[i], 1, 0);
        }
        if (fds[i].revents) ++count;
    }
    return count;
}

} // namespace

void take_cq_events(RSocket& s) {
    ibv_cq* cq;
    void* context;
    while (ibv_get_cq_event(s.comp, &cq, &context) == 0)
        ibv_ack_cq_events(cq, 1);
}

void take_cm_events(RSocket& s) {
    if (!s.flow || s.flow->link() == Link::Failed) return;
    for (;;) {
        if (complete(priv(s.id)) && errno == EAGAIN) return;
        const rdma_cm_event* e = s.id->event;
        if (!e) { // the channel itself failed: the NIC is gone
            s.flow->fail(ENODEV);
            return;
        }
        switch (e->event) {
        case RDMA_CM_EVENT_DISCONNECTED: // the peer's NIC ended the connection
            s.flow->close_link();
            break;
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
            s.flow->fail(ENODEV);
            return;
        default: // TIMEWAIT_EXIT and the like
            break;
        }
    }
}

void progress(RSocket& s) {
    StreamFlow& f = *s.flow;
    f.update_credits();
    // Now and then a look at the CM channel, for an app that only polls without sleeping.
    const uint64_t now = coarse_ms();
    if (now - s.last_cm_check >= 10) {
        s.last_cm_check = now;
        take_cm_events(s);
    }
    ibv_wc wc[16];
    int n;
    while ((n = ibv_poll_cq(s.cq, 16, wc)) > 0)
        for (int i = 0; i < n; ++i)
            f.on_completion(wc[i]);
    f.after_poll();
    f.update_credits();
}

void kick(RSocket& s) {
    const uint64_t one = 1;
    if (s.wake_fd >= 0 && ::write(s.wake_fd, &one, sizeof one) < 0) {
        // full: a wake-up is pending anyway
    }
}

int wait_fd(int fd, std::unique_lock<std::mutex>* lock, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    if (lock) lock->unlock();
    const int r = sys_poll(&p, 1, timeout_ms);
    if (lock) lock->lock();
    return r;
}

int wait_until(RSocket& s, std::unique_lock<std::mutex>& lock, bool nonblock,
               bool (*ready)(const RSocket&)) {
    const Defaults& d = defaults();
    bool spun = false;
    for (;;) {
        progress(s);
        if (ready(s)) return 0;
        if (nonblock) return fail(EAGAIN);
        if (!spun) { // completions often come within microseconds: look again before sleeping
            spun = true;
            const uint64_t start = now_us();
            while (now_us() - start < d.polling_time_us) {
                progress(s);
                if (ready(s)) return 0;
            }
        }
        if (s.waiter) { // another thread sleeps on the fds: it wakes us when it comes back
            s.cv.wait(lock);
            continue;
        }
        s.waiter = true;
        ibv_req_notify_cq(s.cq, 0);
        progress(s); // what came before the CQ was armed
        if (!ready(s)) {
            pollfd p[3];
            const int n = wait_fds(s, p, true);
            lock.unlock();
            sys_poll(p, static_cast<nfds_t>(n), d.wake_up_interval_ms);
            lock.lock();
            if (p[0].revents) take_cq_events(s);
            if (p[1].revents) take_cm_events(s);
            if (p[2].revents) drain(s.wake_fd);
        }
        s.waiter = false;
        s.cv.notify_all();
    }
}

} // namespace rdmacm::rs

using namespace rdmacm;
using namespace rdmacm::rs;

RDMACM_EXPORT int rpoll(pollfd* fds, nfds_t nfds, int timeout) {
    const Defaults& d = defaults();
    const uint64_t start = now_us();
    for (;;) {
        const int n = check_all(fds, nfds);
        if (n || timeout == 0) return n;
        if (now_us() - start >= d.polling_time_us) break;
    }
    thread_local std::vector<pollfd> sleep_on;
    thread_local std::vector<RSocket*> owner; // the rsocket of each sleep_on entry, or null
    thread_local std::vector<ds::Socket*> dgram_owner; // the same for datagram rsockets
    for (;;) {
        sleep_on.clear();
        owner.clear();
        dgram_owner.clear();
        bool ready = false;
        for (nfds_t i = 0; i < nfds && !ready; ++i) {
            if (ds::Socket* dgram =
                    ds::lookup(fds[i].fd)) { // its fds: check_all takes their events
                const size_t before = sleep_on.size();
                ready = ds::arm(*dgram, fds[i].events, sleep_on);
                owner.resize(owner.size() + sleep_on.size() - before, nullptr);
                dgram_owner.resize(before, nullptr);
                dgram_owner.resize(sleep_on.size(), dgram);
                continue;
            }
            RSocket* s = lookup(fds[i].fd);
            if (!s) {
                sleep_on.push_back({fds[i].fd, fds[i].events, 0});
                owner.push_back(nullptr);
                continue;
            }
            std::lock_guard lock(s->mutex);
            if (s->phase == Phase::Open) ibv_req_notify_cq(s->cq, 0);
            if (revents_of(*s, fds[i].events)) { // it changed while the CQ was armed
                ready = true;
                break;
            }
            pollfd p[3];
            const int n = wait_fds(*s, p, false);
            for (int k = 0; k < n; ++k) {
                sleep_on.push_back(p[k]);
                owner.push_back(s);
            }
        }
        if (ready) return check_all(fds, nfds);
        int sleep_ms = d.wake_up_interval_ms;
        if (timeout >= 0) {
            const int64_t left = timeout - static_cast<int64_t>((now_us() - start) / 1000);
            if (left <= 0) return 0;
            sleep_ms = static_cast<int>(std::min<int64_t>(left, sleep_ms));
        }
        if (sys_poll(sleep_on.data(), sleep_on.size(), sleep_ms) < 0) return -1;
        for (size_t k = 0; k < sleep_on.size(); ++k) {
            if (k < dgram_owner.size() && dgram_owner[k] && sleep_on[k].revents)
                ds::woke(*dgram_owner[k], sleep_on[k].fd);
            RSocket* s = owner[k];
            if (!s || !sleep_on[k].revents) continue;
            std::lock_guard lock(s->mutex);
            if (s->phase != Phase::Open) continue; // connecting: revents_of drives it
            if (sleep_on[k].fd == s->comp->fd)
                take_cq_events(*s);
            else if (sleep_on[k].fd == s->fd)
                take_cm_events(*s);
            if (s->waiter) kick(*s); // the events may have been the sleeping thread's
        }
        const int n = check_all(fds, nfds);
        if (n) return n;
        if (timeout >= 0 && (now_us() - start) / 1000 >= static_cast<uint64_t>(timeout)) return 0;
    }
}

RDMACM_EXPORT int rselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                          timeval* timeout) {
    std::vector<pollfd> fds;
    for (int fd = 0; fd < nfds; ++fd) {
        short events = 0;
        const bool in = readfds && FD_ISSET(fd, readfds);
        const bool out = writefds && FD_ISSET(fd, writefds);
        const bool ex = exceptfds && FD_ISSET(fd, exceptfds);
        if (in) events |= POLLIN;
        if (out) events |= POLLOUT;
        if (in || out || ex) fds.push_back({fd, events, 0});
    }
    const int ms =
        timeout ? static_cast<int>(timeout->tv_sec * 1000 + timeout->tv_usec / 1000) : -1;
    const int ret = rpoll(fds.data(), fds.size(), ms);
    if (readfds) FD_ZERO(readfds);
    if (writefds) FD_ZERO(writefds);
    if (exceptfds) FD_ZERO(exceptfds);
    if (ret <= 0) return ret;
    int count = 0;
    for (const pollfd& p : fds) {
        if (readfds && (p.revents & (POLLIN | POLLHUP))) {
            FD_SET(p.fd, readfds);
            ++count;
        }
        if (writefds && (p.revents & POLLOUT)) {
            FD_SET(p.fd, writefds);
            ++count;
        }
        if (exceptfds && (p.revents & ~(POLLIN | POLLOUT | POLLHUP))) {
            FD_SET(p.fd, exceptfds);
            ++count;
        }
    }
    return count;
}
