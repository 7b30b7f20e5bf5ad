#include "daemon/engine.h"

#include "control/status_json.h"
#include "emu/ipc/protocol.h"
#include "objects/session_objects.h"
#include "transport/engines.h"
#include "transport/raw.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <sys/socket.h>

namespace nicsim {

Engine::Engine(boost::asio::io_context& io, Nic& nic, UdpLink& link, spdlog::logger& log,
               PeerReasons* peers)
    : nic_(nic), link_(link), log_(log), peers_(peers), scheduler_(nic),
      router_(*this, link.counters(), link.port(),
              [&link](const emu::wire::IpAddress& addr) { return link.in_set(addr); }),
      timer_(io), wake_(io) {
    link_.attach([this](const emu::wire::IpEndpoint& from, uint8_t* data, size_t len,
                        const uint8_t* mgid,
                        const IpFields& ip) { router_.route(from, data, len, mgid, ip); });
    if (!wake_.watch(link_.fd(), WakeSet::kLink, false))
        throw std::runtime_error(std::string("cannot watch the link's socket (epoll_ctl): ") +
                                 std::strerror(errno));
}

uint64_t Engine::now_us() {
    using namespace std::chrono;
    return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

void Engine::transmit(Qp&, const emu::wire::IpAddress& dst_addr, uint8_t* packet, size_t len,
                      uint8_t tclass) {
    link_.send(dst_addr, packet, len, tclass);
}

void Engine::transmit_multicast(Qp&, const uint8_t* mgid, uint8_t* packet, size_t len,
                                uint8_t tclass) {
    link_.send_multicast(mgid, packet, len, tclass);
}

// The poll loop's next turn runs it.
void Engine::schedule(Qp& qp) {
    scheduler_.schedule(qp);
}

// A bounded turn of the run queue, then the sockets' turn: the rest of the queue runs after them.
size_t Engine::turn(bool link_readable) {
    size_t done = link_readable ? link_.receive() : 0;
    done += poll_doorbells();
    if (scheduler_.runnable()) {
        scheduler_.run(*this);
        ++done;
    }
    if (link_.end_turn()) ++done;
    return done;
}

void Engine::set_timer(Qp& qp, uint64_t at_us) {
    if (scheduler_.set_timer(qp, at_us)) arm_timer();
}

void Engine::arm_timer() {
    uint64_t next = scheduler_.next_deadline();
    if (!next || (timer_armed_for_ && timer_armed_for_ <= next)) return;
    timer_armed_for_ = next;
    uint64_t now = now_us();
    timer_.expires_after(std::chrono::microseconds(next > now ? next - now : 0));
    timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;
        timer_armed_for_ = 0;
        scheduler_.fire_due(*this, now_us());
        arm_timer();
    });
}

void Engine::async_event(int async_fd, ibv_event_type type, uint32_t handle, uint32_t reason) {
    if (async_fd < 0) return;
    emu::ipc::AsyncEventRecord rec{static_cast<uint32_t>(type), handle, reason, 0};
    [[maybe_unused]] ssize_t n = ::send(async_fd, &rec, sizeof rec, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void Engine::tell_peer(const emu::wire::IpAddress& peer_addr, const PeerReason& reason) {
    if (peers_) peers_->tell(peer_addr, reason);
}

std::optional<PeerReason> Engine::peer_reason(const emu::wire::IpAddress& peer_addr, uint32_t qpn,
                                              uint32_t psn) {
    return peers_ ? peers_->find(peer_addr, qpn, psn) : std::nullopt;
}

void Engine::qp_modified(Qp& qp, ibv_qp_state from) {
    transport::modified(*this, qp, from);
}

void Engine::qp_destroying(Qp& qp) {
    // Queued QPNs and deadlines of this QP find nothing once it is unregistered.
    qp.scheduled = false;
    transport::serve_window_queue(*this); // what it held of the host's window is free
}

void Engine::send_posted(Qp& qp) {
    // Bounded as one drain is: an RC QP stops at its window, and its peer's ACKs find no QP.
    for (int turns = 0; turns < QpScheduler::kTurnsPerRun &&
                        transport::run(*this, qp, QpScheduler::kBudgetPerTurn);
         ++turns) {
    }
}

void Engine::wq_error(Wq& wq) {
    raw::flush_wq(*this, wq);
}

void Engine::complete(Cq& cq, const ibv_wc& wc) {
    transport::post_completion(*this, cq, wc, false);
}

void Engine::doorbell(SessionObjects& objects) {
    serve_doorbell(objects);
}

// The kick's eventfd is never read: the loop wakes on it (edge-triggered) and looks at the bits.
bool Engine::watch_doorbell(SessionObjects& objects, int kick_fd) {
    if (!wake_.watch(kick_fd, WakeSet::kKick, true)) {
        log_.warn("cannot watch a session's doorbell eventfd (epoll_ctl: {}): its kicks go "
                  "through the event loop",
                  std::strerror(errno));
        return false;
    }
    objects.doorbell_page->nic_sleeping.store(asleep_ ? 1 : 0, std::memory_order_seq_cst);
    doorbells_.push_back(&objects);
    return true;
}

void Engine::unwatch_doorbell(SessionObjects& objects, int kick_fd) {
    if (std::erase(doorbells_, &objects)) wake_.unwatch(kick_fd);
}

// Takes the bits the app set and serves their queues: O(1) per QP that posted. Bits naming no
// QP of the session (the page is the app's to scribble on) are ignored.
size_t Engine::serve_doorbell(SessionObjects& objects) {
    emu::ipc::DoorbellPage* page = objects.doorbell_page;
    if (!page) return 0;
    size_t served = 0;
    const size_t words = (objects.doorbell_qps.size() + 63) / 64;
    for (size_t w = 0; w < words; ++w) {
        if (page->pending[w].load(std::memory_order_relaxed) == 0) continue;
        uint64_t bits = page->pending[w].exchange(0, std::memory_order_acquire);
        for (; bits; bits &= bits - 1) {
            size_t slot = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
            ++served;
            if (slot == emu::ipc::kDoorbellAll) {
                objects.qps.for_each([this](Qp& qp) { transport::doorbell(*this, qp); });
            } else if (slot < objects.doorbell_qps.size() && objects.doorbell_qps[slot]) {
                transport::doorbell(*this, *objects.doorbell_qps[slot]);
            }
        }
    }
    return served;
}

size_t Engine::poll_doorbells() {
    size_t served = 0;
    for (SessionObjects* objects : doorbells_)
        served += serve_doorbell(*objects);
    return served;
}

bool Engine::prepare_sleep() {
    for (SessionObjects* objects : doorbells_)
        objects->doorbell_page->nic_sleeping.store(1, std::memory_order_seq_cst);
    // A post that came before the flag was visible: its bit is set now.
    for (SessionObjects* objects : doorbells_) {
        const size_t words = (objects->doorbell_qps.size() + 63) / 64;
        for (size_t w = 0; w < words; ++w)
            if (objects->doorbell_page->pending[w].load(std::memory_order_seq_cst)) {
                woke();
                return false;
            }
    }
    asleep_ = true;
    return true;
}

bool Engine::kicked_from(int cpu) {
    bool found = false;
    for (SessionObjects* objects : doorbells_)
        if (objects->doorbell_page->kicker_cpu.exchange(-1, std::memory_order_relaxed) == cpu)
            found = true;
    return found;
}

void Engine::woke() {
    asleep_ = false;
    for (SessionObjects* objects : doorbells_)
        objects->doorbell_page->nic_sleeping.store(0, std::memory_order_relaxed);
}

} // namespace nicsim

namespace nicsim {

Json Engine::counters_json() const {
    return host_counters_json(link_.counters(), nic_.raw_counters(), nic_.mcast_counters(),
                              nic_.drops(), nic_.poll_counters());
}

} // namespace nicsim
