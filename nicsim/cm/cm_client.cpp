#include "cm_client.h"
#include "support/app_socket_pair.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/socket.h>

namespace nicsim::cm {

int CmClient::create_channel(uint32_t& handle, UniqueFd& app_end) {
    AppSocketPair pair;
    if (int err = make_app_socket_pair(pair)) return err;
    handle = ++last_channel_;
    channels_[handle].sock = std::move(pair.nic_end);
    app_end = std::move(pair.app_end);
    return 0;
}

void CmClient::destroy_channel(uint32_t channel) {
    auto it = channels_.find(channel);
    if (it == channels_.end()) return;
    retired_.push_back(std::move(it->second.sock));
    if (retired_.size() > kRetiredSockets) retired_.pop_front();
    channels_.erase(it);
}

// One token per non-empty queue: never more than one datagram waits in a channel's socket.
void CmClient::arm(Channel& c) {
    if (c.token || c.events.empty()) return;
    const char token = 'e';
    if (::send(c.sock.get(), &token, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1) c.token = true;
}

void CmClient::queue(uint32_t channel, const emu::ipc::CmEventRecord& event) {
    auto it = channels_.find(channel);
    if (it == channels_.end()) return;
    it->second.events.push_back(event);
    arm(it->second);
}

bool CmClient::take(uint32_t channel, emu::ipc::CmEventRecord& out) {
    auto it = channels_.find(channel);
    if (it == channels_.end()) return false;
    Channel& c = it->second;
    c.token = false; // the app read it to ask
    bool have = !c.events.empty();
    if (have) {
        out = c.events.front();
        c.events.pop_front();
    }
    arm(c);
    return have;
}

void CmClient::drop_events_if(const std::function<bool(const emu::ipc::CmEventRecord&)>& drop) {
    for (auto& [handle, c] : channels_)
        std::erase_if(c.events, drop);
}

void CmClient::move_events(uint32_t id, uint32_t to) {
    auto dst = channels_.find(to);
    if (dst == channels_.end()) return;
    for (auto& [handle, c] : channels_) {
        if (handle == to) continue;
        auto moved = std::stable_partition(c.events.begin(), c.events.end(),
                                           [id](const auto& e) { return e.id != id; });
        dst->second.events.insert(dst->second.events.end(), moved, c.events.end());
        c.events.erase(moved, c.events.end());
    }
    arm(dst->second);
}

size_t CmClient::queued(uint32_t channel) const {
    auto it = channels_.find(channel);
    return it == channels_.end() ? 0 : it->second.events.size();
}

} // namespace nicsim::cm
