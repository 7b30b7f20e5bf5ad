// The host's transport totals, one enumerated list as rxe keeps them: first rxe's hw_counters
// under rxe's names (drivers/infiniband/sw/rxe/rxe_hw_counters.c), then ours. They count every
// QP of the host, destroyed ones included, for as long as the daemon runs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace nicsim {

enum class HwCounter : uint8_t {
    // rxe's, in its order.
    SentPkts,         // packets the transport sent (the link's tx_packets)
    RcvdPkts,         // packets that reached the transport (ICRC good, parsed)
    DuplicateRequest, // requests for PSNs executed already
    OutOfSeqRequest,  // requests ahead of the expected PSN
    RcvdRnrErr,       // RNR NAKs received by requesters
    SendRnrErr,       // RNR NAKs sent by responders
    RcvdSeqErr,       // PSN sequence error NAKs received
    AckDeferred,      // ACKs queued behind READ responses (rxe: responses the completer deferred)
    RetryExceededErr, // WRs ended by IBV_WC_RETRY_EXC_ERR
    RetryRnrExceededErr, // WRs ended by IBV_WC_RNR_RETRY_EXC_ERR
    CompleterRetryErr,   // go-back-N retries after a timeout, a NAK or a gap (not RNR waits)
    SendErr,             // packets the kernel did not take (full socket buffer)
    LinkDowned,          // the port never goes down here: always 0
    RdmaSends,           // SEND WRs completed
    RdmaRecvs,           // receives completed
    // Ours.
    Timeouts,           // retransmit timer expiries with work outstanding
    NaksSent,           // NAKs of any code sent (RNR NAKs not included)
    NaksReceived,       // NAKs of any code received (RNR NAKs not included)
    RequestsRefused,    // requests a responder refused (access, invalid, operational errors)
    ErrorCompletions,   // completions with an error status, flushes not included
    FlushedCompletions, // completions with IBV_WC_WR_FLUSH_ERR
    Count,
};

inline constexpr std::array<const char*, static_cast<size_t>(HwCounter::Count)> kHwCounterNames = {
    "sent_pkts",           "rcvd_pkts",
    "duplicate_request",   "out_of_seq_request",
    "rcvd_rnr_err",        "send_rnr_err",
    "rcvd_seq_err",        "ack_deferred",
    "retry_exceeded_err",  "retry_rnr_exceeded_err",
    "completer_retry_err", "send_err",
    "link_downed",         "rdma_sends",
    "rdma_recvs",          "timeouts",
    "naks_sent",           "naks_received",
    "requests_refused",    "error_completions",
    "flushed_completions",
};

class HwCounters {
  public:
    void add(HwCounter c, uint64_t n = 1) { values_[static_cast<size_t>(c)] += n; }
    void set(HwCounter c, uint64_t v) { values_[static_cast<size_t>(c)] = v; }
    uint64_t get(HwCounter c) const { return values_[static_cast<size_t>(c)]; }
    // {"sent_pkts":N,...} in the list's order.
    std::string json() const;

  private:
    std::array<uint64_t, static_cast<size_t>(HwCounter::Count)> values_{};
};

} // namespace nicsim
