// Raw packet QPs: the app's send buffers are whole Ethernet frames. The emulated port loops
// each frame back to this NIC (as a NIC's local loopback does): the NIC's flows (ibv_create_flow)
// steer it to the raw packet QPs they name, and a frame no flow matches is dropped and counted.
// Frames do not leave the host.
#pragma once

#include "emu/flow_match.h"
#include "objects/qp_transport.h"
#include "transport_env.h"

#include <cstddef>
#include <cstdint>

namespace nicsim {

struct Qp;
struct Wq;

namespace raw {

// Sends one frame from a raw packet QP's send WR. Returns its completion status: LOC_LEN_ERR
// for a frame shorter than an Ethernet header or longer than limits::kMaxRawFrame.
ibv_wc_status send(TransportEnv& env, Qp& qp, SendOp& op);

// A frame at the port: every QP with a flow that matches it gets a copy (each QP once, in
// flow priority order). Returns how many QPs matched.
size_t steer(TransportEnv& env, const uint8_t* frame, size_t len);

// Puts one frame into `qp`'s next receive (RQ or SRQ; for an RSS QP, the WQ its hash picks)
// and completes it. A QP that is not in RTR or RTS, or has no receive posted, drops it.
void receive(TransportEnv& env, Qp& qp, const emu::flow::Frame& fields, const uint8_t* frame,
             size_t len);

// Completes every receive posted to `wq` with IBV_WC_WR_FLUSH_ERR (the WQ went to ERR).
void flush_wq(TransportEnv& env, Wq& wq);

} // namespace raw
} // namespace nicsim
