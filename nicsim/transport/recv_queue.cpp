#include "recv_queue.h"
#include "engines.h"
#include "wqe_sges.h"

#include <spdlog/fmt/fmt.h>

#include <cstring>

namespace nicsim {

bool take_recv(TransportEnv& env, const RecvTarget& t, RecvBuffers& out, ibv_wc_status* status,
               std::string* why) {
    if (!t.ring) return false;
    const Ring& ring = *t.ring;
    emu::ipc::RingHeader* hdr = ring.header;
    uint32_t consumer = hdr->consumer.load(std::memory_order_relaxed);
    uint32_t producer = hdr->producer.load(std::memory_order_acquire);
    if (producer == consumer || producer - consumer > ring.entries) return false;
    const char* slot = ring.slot(consumer);
    emu::ipc::RecvWqe w;
    std::memcpy(&w, slot, sizeof w);
    hdr->consumer.store(consumer + 1, std::memory_order_release);
    if (t.srq) transport::srq_consumed(env, *t.srq);
    out.wr_id = w.wr_id;
    out.local.clear();
    out.capacity = 0;
    WqeSges sges;
    if (w.num_sge > t.max_sge || sizeof w + w.num_sge * sizeof(emu::ipc::Sge) > ring.entry_size ||
        !sges.load(slot + sizeof w, w.num_sge)) {
        *status = IBV_WC_LOC_LEN_ERR;
        if (why)
            *why = fmt::format("the receive wr_id {} has {} SGEs, more than max_recv_sge {}",
                               w.wr_id, w.num_sge, t.max_sge);
        return true;
    }
    *status = resolve_local(env.nic(), t.pd, sges.sge, sges.count, IBV_ACCESS_LOCAL_WRITE,
                            out.local, &out.capacity);
    if (*status != IBV_WC_SUCCESS && why)
        *why = fmt::format(
            "the receive wr_id {}: {}", w.wr_id,
            explain_local(env.nic(), t.pd, sges.sge, sges.count, IBV_ACCESS_LOCAL_WRITE).text());
    return true;
}

std::vector<uint64_t> drain_recvs(Ring& ring) {
    std::vector<uint64_t> wr_ids;
    emu::ipc::RingHeader* hdr = ring.header;
    uint32_t consumer = hdr->consumer.load(std::memory_order_relaxed);
    uint32_t producer = hdr->producer.load(std::memory_order_acquire);
    if (producer - consumer > ring.entries) producer = consumer + ring.entries; // app bug
    for (; consumer != producer; ++consumer) {
        emu::ipc::RecvWqe w;
        std::memcpy(&w, ring.slot(consumer), sizeof w);
        wr_ids.push_back(w.wr_id);
    }
    hdr->consumer.store(consumer, std::memory_order_release);
    return wr_ids;
}

} // namespace nicsim
