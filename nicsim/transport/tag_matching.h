// Tag matching on IBV_SRQT_TM SRQs, after mlx5: every SEND into such an SRQ starts with a TMH
// (struct ibv_tmh: opcode, app context, tag; big-endian). EAGER data goes into the buffer of
// the first enabled tag that matches (tag & mask), after the TMH; RNDV (TMH + RVH: the
// sender's va, rkey and length) makes the NIC READ the data into that buffer on the same QP
// and then SEND a FIN back; with no match either is unexpected and lands whole in an ordinary
// receive of the SRQ, and NO_TAG always does. The responder parses and matches; the requester
// carries the READ and the FIN as internal operations (SendOp::Internal).
#pragma once

#include "transport_env.h"

#include <infiniband/tm_types.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace nicsim {

struct Qp;
struct SendOp;
struct TagMatching;
struct TmTag;

namespace tm {

inline constexpr size_t kTmhSize = sizeof(ibv_tmh);
inline constexpr size_t kRvhSize = sizeof(ibv_rvh);
static_assert(kTmhSize == 16 && kRvhSize == 16);

struct Tmh {
    uint8_t opcode = 0; // enum ibv_tmh_op
    uint32_t app_ctx = 0;
    uint64_t tag = 0;
};
struct Rvh {
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t len = 0;
};

// The TMH at the start of a message's first packet; nothing when it is too short, has an
// unknown opcode, or is a RNDV without its RVH.
std::optional<Tmh> parse_tmh(const uint8_t* payload, size_t len);
Rvh parse_rvh(const uint8_t* payload); // the RVH after a RNDV's TMH (checked by parse_tmh)

// Takes the first enabled tag matching `tag` off the list.
std::optional<TmTag> take_match(TagMatching& tm, uint64_t tag);

// RNDV matched `tag`: queues the READ of the sender's buffer into the tag's buffer.
void start_rndv(TransportEnv& env, Qp& qp, TmTag&& tag, const Tmh& tmh, const Rvh& rvh);
// The requester finished an internal operation (in order, like a WQE): the READ reports
// IBV_WC_TM_DATA_VALID on the receive CQ and queues the FIN; errors complete the tag with
// their status.
void internal_done(TransportEnv& env, Qp& qp, const SendOp& op);

} // namespace tm
} // namespace nicsim
