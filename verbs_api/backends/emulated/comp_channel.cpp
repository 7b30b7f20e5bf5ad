// Completion channels: a real pollable fd on which the NIC posts one record per CQ event.
#include "backends/emulated/dead_nic.h"
#include "backends/emulated/emu_objects.h"
#include "backends/emulated/emulated_verbs.h"

#include <cerrno>
#include <new>
#include <unistd.h>

using namespace verbs;
namespace ipc = emu::ipc;

ibv_comp_channel* emulated::ibv_create_comp_channel(ibv_context* ctx) {
    ipc::HandleReply r{};
    ipc::PassedFds fds;
    if (int err = control(ctx).call<ipc::Op::CreateCompChannel>({}, r, &fds))
        return fail<ibv_comp_channel>(err);
    if (fds.count != 1) {
        fds.close_all();
        return fail<ibv_comp_channel>(EIO);
    }
    int fd = fds.fd[0];
    auto* ch = new (std::nothrow) EmuCompChannel{};
    if (!ch) {
        ::close(fd);
        control(ctx).call<ipc::Op::DestroyCompChannel>({r.handle, 0});
        return fail<ibv_comp_channel>(ENOMEM);
    }
    ch->channel.context = ctx;
    ch->channel.fd = fd;
    ch->handle = r.handle;
    return &ch->channel;
}

int emulated::ibv_destroy_comp_channel(ibv_comp_channel* channel) {
    EmuCompChannel* ch = emu_channel(channel);
    // As rdma-core: a channel that CQs still use is busy. (refcnt counts them.)
    if (channel->refcnt) return destroy_refused(EBUSY);
    if (int err = control(channel->context).call<ipc::Op::DestroyCompChannel>({ch->handle, 0});
        err && !destroyed_with_nic(channel->context, err))
        return destroy_refused(err);
    ::close(channel->fd);
    delete ch;
    return 0;
}

int emulated::ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
    ipc::CompEventRecord rec{};
    ssize_t n = ::read(channel->fd, &rec, sizeof rec);
    EmuSession& s = session(channel->context);
    if (n == 0) { // the NIC is gone (dead_nic.h): EIO, as a disassociated channel answers
        nic_died(s);
        errno = EIO;
        return -1;
    }
    if (n != static_cast<ssize_t>(sizeof rec)) return -1; // errno from read (EAGAIN when empty)
    std::lock_guard lock(s.events_mutex);
    auto it = s.cqs.find(rec.cq);
    if (it == s.cqs.end()) {
        errno = EIO;
        return -1;
    }
    *cq = it->second;
    *cq_context = it->second->cq_context;
    ++emu_cq(it->second)->comp_events_reported;
    return 0;
}

void emulated::ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}
