// nicsim::transport: the transport engines. For RC, UC and XRC, split like rxe: the requester
// turns SQ work requests into packets, the responder executes incoming requests, the completer
// matches responses to outstanding requests and writes completions. Beside them what every QP
// type shares (completions, flushes, errors, drop counters), which ud:: and raw:: use too. All
// of them are driven through TransportEnv.
#pragma once

#include "emu/wire/packet.h"
#include "objects/qp_transport.h"
#include "transport_env.h"

#include <cstdint>

namespace nicsim {

struct Qp;
struct Cq;
struct Srq;

namespace transport {

// The app posted work: take new send WRs, flush when in ERR. Nothing for an ibv_open_qp
// handle, which has no queues of its own (the daemon and the protocol rig both rely on it).
void doorbell(TransportEnv& env, Qp& qp);
// Sends up to `budget` packets (requests and READ responses). True when more are ready.
bool run(TransportEnv& env, Qp& qp, int budget);
// A packet for this QP: request (responder) or response (completer).
void receive(TransportEnv& env, Qp& qp, const emu::wire::Headers& h, const uint8_t* payload,
             size_t len);
void on_timer(TransportEnv& env, Qp& qp);
// The QP changed state through ibv_modify_qp.
void modified(TransportEnv& env, Qp& qp, ibv_qp_state from);

// --- shared by the engines ---

// RC and both halves of XRC: acknowledged, retried, with READs and atomics.
bool reliable(const Qp& qp);
// The opcodes `qp` sends: RC, UC or XRC (an XRC target answers with XRC responses).
emu::wire::Transport transport_of(const Qp& qp);
// The XRC SRQ number `srqn` names for XRC_RECV QP `qp`: it must exist, be an XRC SRQ and
// belong to the QP's XRC domain; nullptr otherwise.
Srq* xrc_srq(TransportEnv& env, const Qp& qp, uint32_t srqn);
// Where receive completions of `qp` go: its receive CQ, or for an XRC target the CQ of the
// XRC SRQ of the message in progress. nullptr: none.
Cq* recv_cq_of(TransportEnv& env, const Qp& qp);
// An async event about `qp` to the session that owns it and to every ibv_open_qp holder, with
// the id of its reason in the owner's ring (0: none).
void qp_event(TransportEnv& env, Qp& qp, ibv_event_type type, uint32_t reason = 0);

// Moves the QP to ERR (IBA 10.3.1): every outstanding and later WR completes with
// IBV_WC_WR_FLUSH_ERR, carrying `reason` (the failure's reason id) as their cause.
void to_error(TransportEnv& env, Qp& qp, uint32_t reason);
void flush(TransportEnv& env, Qp& qp);
// Writes one completion; raises the CQ's event when armed for it. `tm_tag`: the tag of a
// tag-matching completion with IBV_WC_TM_MATCH; `reason`: an error's reason id (reasons.h).
void post_completion(TransportEnv& env, Cq& cq, const ibv_wc& wc, bool solicited,
                     uint64_t tm_tag = 0, uint32_t reason = 0);
// A receive WQE was taken from `srq`: raises IBV_EVENT_SRQ_LIMIT_REACHED when an armed limit
// is crossed, and disarms it (IBA 10.2.9.2).
void srq_consumed(TransportEnv& env, Srq& srq);

// Brings the host's count of bytes in flight up to date with `qp`'s (a path MTU for each PSN it
// sent from una_psn on; nothing once it is not sending). Called wherever una_psn or sent_end_psn
// move.
void count_in_flight(TransportEnv& env, Qp& qp);
// How far past una_psn `qp` may send now: kWindow while the host's window is open to all (no
// QP waits for a turn, and what is in flight and reserved is within host_window_bytes); to the
// end of its turn while it has one; else no further than it has sent.
uint32_t window_of(TransportEnv& env, const Qp& qp);
// The host's window in turns. A QP that may not send and has nothing in flight (nothing of its
// own would wake it: an ACK would) waits in the host's queue. Whenever bytes in flight or
// reserved are given back, the queue's first QPs get turns of kTurnBytes, reserved for them in
// the window, as far as it has room; with no room, the first QP gets the escape: kMinWindowBytes
// past the full window, one QP at a time until its packets are acknowledged, so that QPs whose
// peers are slow to answer cannot hold the rest of the host up. A QP waiting out an RNR NAK
// holds nothing (count_in_flight), so RNR forever holds neither window nor escape; a QP with
// timeout 0 (no retransmit timer) whose peer is gone holds what it sent for good. Without
// turns, every QP sent its first 8 KiB past a full window: 1000 QPs let 8 MB fly beside the
// 4 MiB window, and into a 208 KiB buffer (rmem_max) 100 QPs lost packets at every burst.
// Queues `qp` (when it has nothing in flight); its end_turn serves the queue.
void wait_for_turn(TransportEnv& env, Qp& qp);
// `bytes` more of `qp`'s packets are in flight: its turn has that much less to send.
void turn_sent(TransportEnv& env, Qp& qp, uint64_t bytes);
// `qp` stopped sending: what its turn did not send goes back to the host's window, and the queue
// is served.
void end_turn(TransportEnv& env, Qp& qp);
// Gives turns to the queue's first QPs as far as the host's window has room (or the escape).
void serve_window_queue(TransportEnv& env);
// A QP going away takes its turn, its reservation and its escape with it.
void leave_window(Nic& nic, Qp& qp);
// The host's window: kHostWindowBytes, or half the link's receive buffer where the kernel gave
// it less (without CAP_NET_ADMIN, net.core.rmem_max caps it: 208 KiB by default, which the
// kernel doubles). A window the peer's socket cannot hold loses packets at every burst, and
// go-back-N resends each loss's whole window: ib_write_bw 64 KiB moved 455 MiB/s sending three
// times the data, against 1867 with no loss in a window of half the buffer (2026-12-06).
uint64_t host_window_bytes(const Nic& nic);
// The PSNs of kMinWindowBytes at `qp`'s path MTU, at least one.
uint32_t min_window(const Qp& qp);

// Counts one packet in `which` of the QP's drop counters and of the host's.
void count_drop(TransportEnv& env, Qp& qp, uint64_t DropCounters::*which);

uint32_t mtu_bytes(const Qp& qp);
emu::wire::IpAddress dest_addr(const Qp& qp); // the peer's address: its GID
// Builds and sends one packet of `qp` to its peer; payload already at buf + header length.
void send_packet(TransportEnv& env, Qp& qp, emu::wire::Headers& h, uint8_t* buf,
                 size_t payload_len);
void send_ack(TransportEnv& env, Qp& qp, uint32_t psn, uint8_t syndrome);

// Completer: completes acknowledged requests in order.
void complete_ready(TransportEnv& env, Qp& qp);
void retransmit_from(TransportEnv& env, Qp& qp, uint32_t psn);
void handle_response(TransportEnv& env, Qp& qp, const emu::wire::Headers& h, const uint8_t* payload,
                     size_t len);
// Responder.
void handle_request(TransportEnv& env, Qp& qp, const emu::wire::Headers& h, const uint8_t* payload,
                    size_t len);
bool send_read_responses(TransportEnv& env, Qp& qp, int& budget);
// Requester.
void fetch(TransportEnv& env, Qp& qp);
bool transmit(TransportEnv& env, Qp& qp, int& budget);
void arm_retransmit_timer(TransportEnv& env, Qp& qp);

inline constexpr size_t kMaxPacket = 4096 + 128; // largest MTU plus headers, pad and ICRC
inline constexpr uint32_t kWindow = 512;         // unacknowledged PSNs in flight: 2 MiB at MTU 4096
// The host's window: bytes in flight across all its reliable QPs, counted as a path MTU per PSN
// (what the peer's receive buffer may have to hold). Beyond it a QP sends only its first
// kMinWindowBytes. The link's receive buffer (8 MiB, udp_link.cpp) holds about twice this:
// without it 100 QPs' full windows overran it and go-back-N resent 40% more than the job
// (ib_write_bw -q 100, 2026-12-03); counted in packets (4096 of them) it let 16 MiB fly at MTU
// 4096, and the peer's socket dropped 7% of ib_write_bw -q 1000 (2026-12-06).
inline constexpr uint64_t kHostWindowBytes = 4u << 20;
// The escape's size (wait_for_turn): 8 PSNs at MTU 1024, 2 at 4096.
inline constexpr uint32_t kMinWindowBytes = 8u << 10;
// A turn in a full host's window: a 64 KiB message at once, its packets one burst of the link
// (GSO) and one stretch of its memory; 1000 QPs taking 8 KiB each in turn cost the NICs twice the
// CPU per byte (bench/README.md, 2026-12-06).
inline constexpr uint64_t kTurnBytes = 64u << 10;
inline constexpr uint32_t kAckEvery = 32;  // AckReq at least this often in a message
inline constexpr uint32_t kReadChunk = 64; // response packets one READ request asks for
// Response packets a READ asks for ahead of those it has: the responder queues every one it is
// asked for and answers a re-request only after them, so under loss a deep queue of responses
// nobody waits for any more outlasts the retries.
inline constexpr uint32_t kReadAhead = 128;

} // namespace transport
} // namespace nicsim
