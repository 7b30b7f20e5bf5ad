// A CM session's side of the agent: its event channels, each a queue of events and a socket whose
// app end is rdma_event_channel.fd (emu/ipc/cm_protocol.h). The socket holds one token while
// the queue is not empty, so the app's poll() sees exactly that.
#pragma once

#include "emu/ipc/cm_protocol.h"
#include "support/unique_fd.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>

namespace nicsim::cm {

class CmClient {
  public:
    explicit CmClient(uint32_t session_id) : session_id_(session_id) {}

    uint32_t session_id() const { return session_id_; }

    // A new channel; `app_end` gets the socket end the app polls. 0 or a positive errno.
    int create_channel(uint32_t& handle, UniqueFd& app_end);
    bool has_channel(uint32_t channel) const { return channels_.count(channel) != 0; }
    // The channel and its events go; its socket stays open (at most kRetiredSockets of them,
    // until the session ends), as a kernel file outlives its close while a thread still waits
    // in it: a thread of the app that still reads the channel keeps waiting instead of seeing
    // the NIC gone.
    void destroy_channel(uint32_t channel);
    size_t channel_count() const { return channels_.size(); }

    void queue(uint32_t channel, const emu::ipc::CmEventRecord& event);
    // The channel's oldest event; false when it has none.
    bool take(uint32_t channel, emu::ipc::CmEventRecord& out);
    // Takes back the queued events (not yet read) that `drop` picks.
    void drop_events_if(const std::function<bool(const emu::ipc::CmEventRecord&)>& drop);
    // The queued events of `id` go to `to` (rdma_migrate_id), in their order.
    void move_events(uint32_t id, uint32_t to);
    size_t queued(uint32_t channel) const;

  private:
    struct Channel {
        UniqueFd sock; // the NIC's end
        std::deque<emu::ipc::CmEventRecord> events;
        bool token = false; // a token is in the socket, or being turned into a CmGetEvent
    };
    void arm(Channel& c);

    static constexpr size_t kRetiredSockets = 64;

    uint32_t session_id_;
    std::deque<UniqueFd> retired_;
    uint32_t last_channel_ = 0;
    std::map<uint32_t, Channel> channels_;
};

} // namespace nicsim::cm
