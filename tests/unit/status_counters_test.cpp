// The counters objects of `rdmaemu status --json`, derived from the counter lists: their keys and
// their order are what tools and tests parse, so they are pinned here as the daemon wrote them
// before the lists.
#include "cm/cm_counters.h"
#include "control/status_json.h"
#include "diag/hw_counters.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

using namespace nicsim;

TEST_CASE("status counters: the host's counters keep their keys and order", "[status]") {
    LinkCounters link;
    link.icrc_errors = 7;
    link.mcast.malformed = 3;
    RawCounters raw;
    raw.no_flow_drops = 5;
    McastCounters mcast;
    mcast.no_member = 2;
    DropCounters drops;
    drops.reacks_suppressed = 9;
    PollCounters poll;
    poll.polls_suspended = 4;
    CHECK(host_counters_json(link, raw, mcast, drops, poll).dump() ==
          "{\"tx_packets\":0,\"tx_bytes\":0,\"tx_datagrams\":0,\"loopback_packets\":0,"
          "\"rx_datagrams\":0,"
          "\"rx_packets\":0,\"rx_bytes\":0,\"icrc_errors\":7,\"icrc_ipv4_id_recovered\":0,"
          "\"malformed\":0,\"unknown_qp\":0,\"fault_drops\":0,\"fault_duplicates\":0,"
          "\"fault_reorders\":0,\"fault_corruptions\":0,\"raw_tx_frames\":0,\"raw_tx_bytes\":0,"
          "\"raw_delivered\":0,\"raw_no_flow_drops\":5,\"raw_no_wqe_drops\":0,"
          "\"mcast_tx_packets\":0,\"mcast_rx_packets\":0,\"mcast_rx_delivered\":0,"
          "\"mcast_no_member\":2,\"mcast_malformed\":3,\"wrong_source\":0,\"ghost_responses\":0,"
          "\"duplicate_responses\":0,\"out_of_sequence\":0,\"behind_rnr_nak\":0,"
          "\"duplicate_requests\":0,"
          "\"reacks_suppressed\":9,\"polls_suspended\":4,\"cpu_moves\":0}");
}

TEST_CASE("status counters: a QP's counters keep their keys and order", "[status]") {
    QpCounters c;
    c.naks_received = 4;
    c.drops.wrong_source = 1;
    Json j = {{"qpn", "0x11"}};
    add_counters(j, "", c);
    add_counters(j, "", c.drops);
    CHECK(j.dump() ==
          "{\"qpn\":\"0x11\",\"tx_packets\":0,\"tx_bytes\":0,\"rx_packets\":0,\"rx_bytes\":0,"
          "\"retransmits\":0,\"timeouts\":0,\"naks_sent\":0,\"naks_received\":4,"
          "\"rnr_naks_sent\":0,\"rnr_naks_received\":0,\"xrc_srq_errors\":0,"
          "\"tm_malformed\":0,\"wrong_source\":1,\"ghost_responses\":0,"
          "\"duplicate_responses\":0,\"out_of_sequence\":0,\"behind_rnr_nak\":0,"
          "\"duplicate_requests\":0,"
          "\"reacks_suppressed\":0}");
}

TEST_CASE("status counters: the CM agent's counters keep their keys and order", "[status]") {
    cm::CmCounters c;
    c.req_no_listener = 6;
    Json j = Json::object();
    add_counters(j, "cm_", c);
    CHECK(j.dump() ==
          "{\"cm_rx_mads\":0,\"cm_tx_mads\":0,\"cm_retransmits\":0,\"cm_rx_malformed\":0,"
          "\"cm_rx_not_cm\":0,\"cm_rx_unknown_attr\":0,\"cm_rx_unsupported\":0,"
          "\"cm_rx_duplicates\":0,\"cm_rx_unmatched\":0,\"cm_rx_bad_state\":0,"
          "\"cm_req_no_listener\":6,\"cm_req_rejected\":0,\"cm_req_backlog_drops\":0,"
          "\"cm_timeouts\":0,\"cm_connections\":0}");
}

TEST_CASE("status counters: the transport's hw_counters keep rxe's names and order", "[status]") {
    HwCounters hw;
    hw.add(HwCounter::AckDeferred, 3);
    hw.add(HwCounter::FlushedCompletions);
    CHECK(hw.json().dump() ==
          "{\"sent_pkts\":0,\"rcvd_pkts\":0,\"duplicate_request\":0,\"out_of_seq_request\":0,"
          "\"rcvd_rnr_err\":0,\"send_rnr_err\":0,\"rcvd_seq_err\":0,\"ack_deferred\":3,"
          "\"retry_exceeded_err\":0,\"retry_rnr_exceeded_err\":0,\"completer_retry_err\":0,"
          "\"send_err\":0,\"link_downed\":0,\"rdma_sends\":0,\"rdma_recvs\":0,\"timeouts\":0,"
          "\"naks_sent\":0,\"naks_received\":0,\"requests_refused\":0,"
          "\"resp_local_length_error\":0,\"resp_remote_access_errors\":0,"
          "\"resp_invalid_requests\":0,\"resp_local_protection_errors\":0,"
          "\"error_completions\":0,\"flushed_completions\":1}");
}
