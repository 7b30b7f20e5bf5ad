// The host's transport totals, one list as rxe keeps them (the enum and the names come from it):
// first rxe's hw_counters under rxe's names (drivers/infiniband/sw/rxe/rxe_hw_counters.c), then
// ours. They count every QP of the host, destroyed ones included, for as long as the daemon runs.
#pragma once

#include "support/json.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace nicsim {

#define NICSIM_HW_COUNTERS(X)                                                                      \
    /* rxe's, in its order. */                                                                     \
    X(SentPkts, sent_pkts) /* packets the transport sent (the link's tx_packets) */                \
    X(RcvdPkts, rcvd_pkts) /* packets that reached the transport (ICRC good, parsed) */            \
    X(DuplicateRequest, duplicate_request) /* requests for PSNs executed already */                \
    X(OutOfSeqRequest, out_of_seq_request) /* requests ahead of the expected PSN */                \
    X(RcvdRnrErr, rcvd_rnr_err)            /* RNR NAKs received by requesters */                   \
    X(SendRnrErr, send_rnr_err)            /* RNR NAKs sent by responders */                       \
    X(RcvdSeqErr, rcvd_seq_err)            /* PSN sequence error NAKs received */                  \
    /* ACKs queued behind READ responses (rxe: responses the completer deferred) */                \
    X(AckDeferred, ack_deferred)                                                                   \
    X(RetryExceededErr, retry_exceeded_err)        /* WRs ended by IBV_WC_RETRY_EXC_ERR */         \
    X(RetryRnrExceededErr, retry_rnr_exceeded_err) /* WRs ended by IBV_WC_RNR_RETRY_EXC_ERR */     \
    /* go-back-N retries after a timeout, a NAK or a gap (not RNR waits) */                        \
    X(CompleterRetryErr, completer_retry_err)                                                      \
    X(SendErr, send_err)       /* packets the kernel did not take (full socket buffer) */          \
    X(LinkDowned, link_downed) /* the port never goes down here: always 0 */                       \
    X(RdmaSends, rdma_sends)   /* SEND WRs completed */                                            \
    X(RdmaRecvs, rdma_recvs)   /* receives completed */                                            \
    /* Ours. */                                                                                    \
    X(Timeouts, timeouts)          /* retransmit timer expiries with work outstanding */           \
    X(NaksSent, naks_sent)         /* NAKs of any code sent (RNR NAKs not included) */             \
    X(NaksReceived, naks_received) /* NAKs of any code received (RNR NAKs not included) */         \
    /* requests a responder refused (access, invalid, operational errors) */                       \
    X(RequestsRefused, requests_refused)                                                           \
    /* ... of which, by class (mlx5's names where mlx5 counts them): receive or SEND length, */    \
    /* rkey/range/rights, invalid or out-of-sequence requests, the receive buffer's lkey */        \
    X(RespLocalLengthError, resp_local_length_error)                                               \
    X(RespRemoteAccessErrors, resp_remote_access_errors)                                           \
    X(RespInvalidRequests, resp_invalid_requests)                                                  \
    X(RespLocalProtectionErrors, resp_local_protection_errors)                                     \
    /* completions with an error status, flushes not included */                                   \
    X(ErrorCompletions, error_completions)                                                         \
    X(FlushedCompletions, flushed_completions) /* completions with IBV_WC_WR_FLUSH_ERR */

#define NICSIM_HW_ENUMERATOR(id, name) id,
enum class HwCounter : uint8_t { NICSIM_HW_COUNTERS(NICSIM_HW_ENUMERATOR) Count };
#undef NICSIM_HW_ENUMERATOR

#define NICSIM_HW_NAME(id, name) #name,
inline constexpr std::array<const char*, static_cast<size_t>(HwCounter::Count)> kHwCounterNames = {
    NICSIM_HW_COUNTERS(NICSIM_HW_NAME)};
#undef NICSIM_HW_NAME

class HwCounters {
  public:
    void add(HwCounter c, uint64_t n = 1) { values_[static_cast<size_t>(c)] += n; }
    void set(HwCounter c, uint64_t v) { values_[static_cast<size_t>(c)] = v; }
    uint64_t get(HwCounter c) const { return values_[static_cast<size_t>(c)]; }
    // {"sent_pkts":N,...} in the list's order.
    Json json() const;

  private:
    std::array<uint64_t, static_cast<size_t>(HwCounter::Count)> values_{};
};

} // namespace nicsim
