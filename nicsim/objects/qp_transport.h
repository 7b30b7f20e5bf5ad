// Per-QP transport state of the RC engines (requester, responder, completer), after rxe's
// split. Kept apart from the verbs-level Qp so each engine's state is visible at a glance.
#pragma once

#include "dma/dma_engine.h"
#include "emu/ipc/rings.h"
#include "emu/wr_opcodes.h"
#include "support/counter_list.h"

#include <cstdint>
#include <deque>
#include <vector>

namespace nicsim {

// A send WQE taken from the SQ, with its local buffers resolved against their MRs.
struct SendOp {
    emu::ipc::SendWqe wqe{};
    uint32_t sq_index = 0;         // ring slot it came from
    std::vector<DmaSegment> local; // the SGEs, in the owner's address space
    // READ and atomics: the SGEs as posted, resolved into `local` only when the response comes
    // (resolve_response_buffers): hardware checks their lkeys as it scatters the response.
    std::vector<emu::ipc::Sge> response_sges;
    bool local_pending = false;
    std::vector<uint8_t> inline_data;  // IBV_SEND_INLINE payload
    uint64_t length = 0;               // message length in bytes
    uint32_t first_psn = 0, npkts = 0; // PSNs first_psn .. first_psn + npkts - 1
    bool started = false;              // PSNs assigned
    uint32_t next_pkt = 0;             // next packet to (re)transmit
    uint64_t response_bytes = 0;       // READ: bytes of response received
    bool done = false;                 // acknowledged (or response complete)
    ibv_wc_status status = IBV_WC_SUCCESS;
    uint32_t reason = 0; // a failed WR: its reason's id in the owner's reason ring (reasons.h)
    // Tag matching's rendezvous: an operation the NIC queues itself, not a WQE of the SQ. It
    // takes no SQ slot and completes into the TM SRQ's CQ (tag_matching.h), never the send CQ.
    enum class Internal : uint8_t { None, RndvRead, RndvFin } internal = Internal::None;
    uint64_t tm_tag = 0;                   // the message's tag (wqe.wr_id: the tag's recv_wr_id)
    const emu::WrOpcodeInfo& info() const; // what its opcode means (emu/wr_opcodes.h)
    bool has(uint32_t wr_flags) const;     // its opcode has every emu::kWr* bit of `wr_flags`
    bool reads() const;                    // READ or atomic: the responder answers with data
    bool signaled(bool sq_sig_all) const;
};

struct RequesterState {
    std::deque<SendOp> ops;   // fetched and not yet completed, oldest first
    uint32_t fetch_index = 0; // next SQ slot to fetch
    uint32_t next_psn = 0;    // PSN of the next new message
    size_t cursor = 0;        // ops[cursor] is the next to (re)transmit
    uint32_t una_psn = 0;     // oldest unacknowledged PSN
    // One past the newest PSN sent (a READ request covers the PSNs of the responses it asks
    // for): responses are valid only in [una_psn, sent_end_psn) (IBA 9.7.5.1).
    uint32_t sent_end_psn = 0;
    uint32_t retry_left = 0;
    uint32_t rnr_left = 0;
    uint64_t timer_at_us = 0;  // retransmit timer; 0 = stopped
    uint64_t rnr_until_us = 0; // RNR wait before resending; 0 = none
    uint32_t reads_outstanding = 0;
    // A READ re-requested from this PSN after a gap: later out-of-order responses (of the
    // old stream) must not trigger another request.
    bool rerequested = false;
    uint32_t rerequest_psn = 0;
    // RNR NAKs in a row for the oldest WR, and when the last notice said so (reasons.h).
    uint64_t rnr_streak = 0;
    uint64_t rnr_noticed_us = 0;
    // This QP's bytes in the host's count of those in flight (Nic::bytes_in_flight): 64 bits, as
    // the PSNs of outstanding READs (up to 2^23) times the path MTU pass 32.
    uint64_t counted_in_flight = 0;
    bool asked_ack = true; // the last packet sent had AckReq set
    // The host's window, where QPs wait for a turn while it is full (engines.h): what this QP's
    // turn may still send, reserved for it in Nic::window_reserved (not the escape's); whether
    // it waits in Nic::window_queue; whether its turn is the host's one escape.
    uint64_t turn_bytes = 0;
    bool window_queued = false;
    bool window_escape = false;
};

// A receive WQE's buffers, resolved against their MRs (recv_queue.h takes them).
struct RecvBuffers {
    uint64_t wr_id = 0;
    std::vector<DmaSegment> local;
    uint64_t capacity = 0;
};

// The receive a message in progress fills.
struct RecvOp : RecvBuffers {
    uint64_t received = 0;
};

struct ReplayEntry { // one READ or atomic the responder executed, for duplicates
    uint32_t psn = 0, npkts = 0;
    bool atomic = false;
    uint64_t atomic_result = 0;
    // A READ's request (its RETH): what a duplicate may ask for again.
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t length = 0;
};

// A response still to send. Responses leave in PSN order (IBA 9.7.5.1.1), so an ACK, NAK or
// atomic ACK waits behind the READ responses queued before it.
struct ResponseJob {
    enum class Kind : uint8_t { Read, Ack, AtomicAck } kind = Kind::Read;
    uint32_t psn = 0; // of the next packet
    // Read
    uint32_t first_psn = 0, last_psn = 0;
    uint32_t rkey = 0;      // looked up per packet: the MR may go away meanwhile
    uint32_t srqn = 0;      // XRC: the XRC SRQ whose PD the READ is checked against
    uint64_t va = 0;        // of the next byte
    uint64_t remaining = 0; // bytes
    // Ack / AtomicAck
    uint8_t syndrome = 0;
    uint64_t atomic_result = 0;
};

// How a SEND into a tag-matching SRQ is delivered (tag_matching.h).
enum class TmMessage : uint8_t {
    None,       // not tag matching: an ordinary receive
    Matched,    // EAGER into a posted tag's buffer, after the TMH
    Unexpected, // no tag matched: whole into an ordinary receive
    NoTag,      // IBV_TMH_NO_TAG: whole into an ordinary receive
    Rndv,       // RNDV matched: the NIC READs the data; the rest of this message is dropped
};

struct ResponderState {
    uint32_t epsn = 0; // expected PSN
    uint32_t msn = 0;
    bool nak_sent = false; // a PSN sequence NAK for epsn is out
    // The message in progress: set by FIRST, continued by MIDDLE/LAST.
    uint32_t in_opcode_class = 0; // 0 none, else the operation class (kSend or kWrite) of its FIRST
    uint32_t srqn = 0;            // XRC target: the XRC SRQ the current request names
    bool have_recv = false;
    RecvOp recv;
    TmMessage tm = TmMessage::None; // the message in progress, into a tag-matching SRQ
    uint64_t tm_tag = 0;
    uint32_t write_rkey = 0;
    uint64_t write_va = 0;
    uint64_t write_remaining = 0;
    uint64_t write_length = 0;
    std::vector<ReplayEntry> replay; // ring of max_dest_rd_atomic entries
    size_t replay_next = 0;
    std::deque<ResponseJob> responses;
    bool failing = false; // a fatal error's NAK is queued: accept nothing more, then ERR
    // The last ACK sent for a duplicate request, which limits how often duplicates are
    // answered (responder.cpp, may_reack). reack_at_us 0: none yet.
    uint32_t reack_psn = 0;
    uint64_t reack_at_us = 0;
    // RNR NAKs sent in a row (no receive posted), and when the last notice said so.
    uint64_t rnr_streak = 0;
    uint64_t rnr_noticed_us = 0;
};

// Packets the transport did not take as new work, and ACKs it held back: kept per QP
// (QpCounters::drops) and for the whole host (Nic::drops), shown by status.
#define NICSIM_DROP_COUNTERS(X)                                                                    \
    X(wrong_source)        /* RC/UC/XRC packets not from the QP's peer address and port */         \
    X(ghost_responses)     /* responses outside the outstanding PSNs, or for no WR */              \
    X(duplicate_responses) /* responses for PSNs acknowledged already */                           \
    X(out_of_sequence)     /* requests ahead of the expected PSN: a packet before them was lost */ \
    X(behind_rnr_nak)      /* requests behind one answered with an RNR NAK: resent later */        \
    X(duplicate_requests)  /* requests for PSNs executed already */                                \
    X(reacks_suppressed)   /* duplicates left unanswered by the re-ACK rate limit */
struct DropCounters {
    NICSIM_COUNTER_SET(NICSIM_DROP_COUNTERS)
};

// A QP's counters as status shows them, before its drops.
#define NICSIM_QP_COUNTERS(X)                                                                      \
    X(tx_packets)                                                                                  \
    X(tx_bytes)                                                                                    \
    X(rx_packets)                                                                                  \
    X(rx_bytes)                                                                                    \
    X(retransmits)                                                                                 \
    X(timeouts)                                                                                    \
    X(naks_sent)                                                                                   \
    X(naks_received)                                                                               \
    X(rnr_naks_sent)                                                                               \
    X(rnr_naks_received)                                                                           \
    X(xrc_srq_errors) /* XRC requests for an unknown SRQ or one of another domain */               \
    X(tm_malformed)   /* SENDs into a tag-matching SRQ without a valid TMH */
struct QpCounters {
    NICSIM_COUNTER_SET(NICSIM_QP_COUNTERS)
    // UD and raw drops, which status does not show (yet): its JSON stays as tools parse it.
    uint64_t qkey_violations = 0, rx_no_wqe = 0;
    DropCounters drops;
};

} // namespace nicsim
