// Everything one control session owns. Freed in dependency order when the session ends, for
// whatever reason (exit, crash, kill -9), through the same paths as the destroy verbs.
#pragma once

#include "dma/session_memories.h"
#include "handle_table.h"
#include "objects.h"
#include "support/json.h"
#include "support/unique_fd.h"

#include "emu/ipc/reasons.h"
#include "emu/ipc/rings.h"

#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace nicsim {

struct SessionObjects {
    // The memory of every process that used the session, by pid (declared first: it outlives
    // every object that reaches into it).
    SessionMemories memories;
    int async_fd = -1; // where async events for this session's objects go
    // Processes that joined the session (ReopenContext) and their own async-event sockets: the
    // events of the objects they made go there.
    std::map<pid_t, UniqueFd> joined_async_fds;
    HandleTable<Pd> pds;
    HandleTable<Mr> mrs;
    HandleTable<Dm> dms;
    HandleTable<Mw> mws;
    HandleTable<CompChannel> channels;
    HandleTable<Cq> cqs;
    HandleTable<Srq> srqs;
    HandleTable<Qp> qps;
    HandleTable<Ah> ahs;
    HandleTable<Flow> flows;
    HandleTable<Wq> wqs;
    HandleTable<RwqIndTable> ind_tables;
    HandleTable<XrcdHandle> xrcds;
    // Who the session is, for the log and status: "session#3 pid 812 (rc_errors)".
    std::string label;
    uid_t uid = 0; // the user who opened it: the keys in a reason's hint are theirs alone
    // Why things failed, for the app (emu/ipc/reasons.h): the ring in the session's shared memory
    // after the doorbell page, and the NIC's own count of the ids written (never the ring's).
    emu::ipc::ReasonRing* reasons = nullptr;
    uint32_t last_reason_id = 0;
    // The session's doorbell page (emu/ipc/rings.h) and which QP each of its slots stands for.
    emu::ipc::DoorbellPage* doorbell_page = nullptr;
    std::vector<Qp*> doorbell_qps{nullptr}; // slot 0: every queue
    // Gives `qp` a doorbell slot of its own; 0 (every queue) when all are taken.
    void take_doorbell_slot(Qp& qp);
    void drop_doorbell_slot(Qp& qp);

    // Where the async events of an object made by process `pid` go.
    int async_fd_of(pid_t pid) const {
        auto it = joined_async_fds.find(pid);
        return it == joined_async_fds.end() ? async_fd : it->second.get();
    }

    size_t count() const {
        return pds.size() + mrs.size() + mws.size() + dms.size() + channels.size() + cqs.size() +
               srqs.size() + qps.size() + ahs.size() + flows.size() + wqs.size() +
               ind_tables.size() + xrcds.size();
    }
    // Object counts as JSON: {"pd":1,"mr":2,...}
    Json counts_json() const;
};

} // namespace nicsim
