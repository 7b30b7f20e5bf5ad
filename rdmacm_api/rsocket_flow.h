// One side of a stream rsocket's data path: the flow control of rdma-core's rsockets
// (emu/wire/rsocket.h), kept apart from sockets, CM and waiting so that tests can drive two of
// them against each other without a NIC.
//
// Sending: bytes are copied into a send ring and RDMA-written (WITH IMMEDIATE: Data | length)
// into the peer's receive buffer at the place its latest grant names. Three things must allow a
// write: a free send WR, room in the send ring, a message credit (the peer's receive queue) and
// bytes left in the granted region (the target SGL the peer writes into our memory).
// Receiving: each Data immediate queues its length; the app copies the bytes out of the receive
// ring in order. When half of the ring is free again, or half of the message credits are used,
// the receiver grants (Sgl): it writes the free half's descriptor into the sender's target SGL
// and, in the immediate, the sequence number the sender may send up to.
// Control messages (grants, shutdown, disconnect, keepalive) have 4 send WRs of their own.
//
// Not thread-safe: the socket holds its lock around every call.
#pragma once

#include "emu/wire/rsocket.h"

#include <infiniband/verbs.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rdmacm::rs {

namespace wire = emu::wire::rsocket;

inline constexpr uint32_t kSendLowWater = 2048; // a send waits for this much free send ring
inline constexpr uint32_t kFirstChunk = 2048;   // a send's first write; each next one doubles...
inline constexpr uint32_t kMaxChunk = 65536;    // ...up to this (overlapping copy and transfer)
inline constexpr uint32_t kCtrlSlots = 4;       // control messages in flight at most
inline constexpr uint32_t kCtrlBufSize = sizeof(wire::Sge); // a control message's payload
inline constexpr uint64_t kRecvWrId = 1ull << 63;

// The QP the flow posts on: ibv_post_send/recv on the real one; tests loop two flows.
class QpPort {
  public:
    virtual ~QpPort() = default;
    virtual int post_send(ibv_send_wr& wr) = 0; // 0 or an errno
    virtual int post_recv(ibv_recv_wr& wr) = 0;
};

// The registered memory of one side.
struct FlowBuffers {
    uint8_t* send = nullptr; // send_size bytes of ring, then kCtrlSlots * kCtrlBufSize
    uint32_t send_size = 0;
    uint32_t send_lkey = 0;
    uint8_t* recv = nullptr; // recv_size (even) bytes: the two halves granted in turn
    uint32_t recv_size = 0;
    uint32_t recv_rkey = 0;
    // The target buffer the peer writes: kTargetSglEntries Sges, then iomap_entries IoMaps.
    uint8_t* target = nullptr;
    uint32_t target_rkey = 0;
    uint32_t iomap_entries = 0;
};

struct FlowLimits {
    uint32_t sq_size = 0; // send WRs (kCtrlSlots of them kept for control messages)
    uint32_t rq_size = 0; // receive WRs: the message credits the peer gets
    uint32_t inline_size = 0;
};

// Bytes to send, taken from an iovec list as the writes go.
class Gather {
  public:
    Gather(const iovec* iov, int iovcnt);
    size_t remaining() const { return remaining_; }
    void copy_to(uint8_t* dst, size_t len);

  private:
    const iovec* iov_;
    int iovcnt_;
    int index_ = 0;
    size_t offset_ = 0;
    size_t remaining_ = 0;
};

// Where received bytes go.
class Scatter {
  public:
    Scatter(const iovec* iov, int iovcnt);
    size_t remaining() const { return remaining_; }
    void copy_from(const uint8_t* src, size_t len);

  private:
    const iovec* iov_;
    int iovcnt_;
    int index_ = 0;
    size_t offset_ = 0;
    size_t remaining_ = 0;
};

enum class Link : uint8_t {
    Up,     // connected (readable/writable say which directions are open)
    Closed, // a disconnect was sent or received: queued data can still be read
    Failed, // a send failed (the QP is in error): error() says why
};

class StreamFlow {
  public:
    StreamFlow(QpPort& qp, FlowLimits limits, FlowBuffers buffers);

    // What goes into our REQ or REP.
    wire::ConnData local_conn_data() const;
    // Posts the receive queue full: before connecting or accepting (data may come at once).
    int post_initial_recvs();
    // The peer's header arrived: false if it names no usable buffer.
    bool start(const wire::ConnData& peer);

    // A completion of this QP (success or not). After a batch, after_poll() reposts receives.
    void on_completion(const ibv_wc& wc);
    int after_poll();

    // Credits: grants to the peer when half the receive ring or half the credits are free.
    bool should_grant() const;
    int grant();
    void update_credits() {
        if (should_grant()) grant();
    }

    bool can_send() const;
    // One write of at most `chunk` (which then doubles up to kMaxChunk) from `src`; can_send()
    // must hold. Returns the bytes posted, or -1 with errno.
    ssize_t send_chunk(Gather& src, uint32_t& chunk);
    // riowrite's plain RDMA WRITE of `len` bytes (can_send() must hold) to a peer's iomap.
    ssize_t write_direct(Gather& src, uint32_t len, uint64_t remote_addr, uint32_t rkey);
    // Tells the peer about our iomap entry `index` (can_send() must hold): 0 or -1.
    int send_iomap(uint32_t index, const wire::IoMap& entry);

    bool has_data() const { return rmsg_head_ != rmsg_tail_; }
    // Copies queued bytes out (peek: leaves them queued). Returns the count.
    size_t receive(Scatter& dst, bool peek);

    bool ctrl_slot_free() const { return ctrl_sent_ - ctrl_done_ < kCtrlSlots; }
    int send_ctrl(wire::Ctrl code); // ctrl_slot_free() must hold
    int send_keepalive();           // a zero-length RDMA WRITE that only the peer's NIC sees
    bool all_sends_done() const;

    Link link() const { return link_; }
    bool readable() const { return readable_; }
    bool writable() const { return writable_; }
    int error() const { return error_; }
    void shut_read() { readable_ = false; }
    void shut_write() { writable_ = false; }
    void close_link(); // Closed: no direction open
    void fail(int err);

    // The peer's iomap table (riowrite's targets) as the peer wrote it into our memory.
    uint32_t iomap_entries() const { return buffers_.iomap_entries; }
    wire::IoMap target_iomap(uint32_t i) const;
    // How many iomap entries of ours the peer has room for.
    uint32_t peer_iomap_entries() const { return remote_iomap_.length; }
    bool swap() const { return swap_; }

  private:
    struct Posted {
        ibv_sge sge[2];
        int nsge;
    };
    // Copies `len` bytes from `src` into the send ring: the SGEs of the write.
    Posted copy_into_ring(Gather& src, uint32_t len);
    Posted copy_into_ring(const void* data, uint32_t len);
    int post_write(const Posted& p, uint32_t len, uint64_t wr_id, bool with_imm, uint32_t imm,
                   uint64_t remote_addr, uint32_t rkey);
    wire::Sge target_sge(uint32_t i) const;
    void set_target_sge(uint32_t i, const wire::Sge& s);
    uint32_t half() const { return buffers_.recv_size / 2; }

    QpPort& qp_;
    FlowLimits limits_;
    FlowBuffers buffers_;
    bool swap_ = false;

    Link link_ = Link::Closed;
    bool readable_ = false;
    bool writable_ = false;
    int error_ = 0;

    // Sending.
    uint32_t sq_free_;          // send WRs for data
    uint32_t ctrl_sent_ = 0;    // control messages posted...
    uint32_t ctrl_done_ = 0;    // ...and completed
    uint32_t ring_head_ = 0;    // next byte of the send ring to fill
    uint32_t ring_free_;        // bytes not in flight
    uint16_t send_seq_ = 0;     // messages sent
    uint16_t send_limit_ = 0;   // the peer's grant: send while send_seq_ != send_limit_
    uint32_t target_index_ = 0; // the target SGL entry being written into
    wire::Sge remote_sgl_{};    // the peer's target SGL (where our grants go)
    uint32_t remote_sge_ = 0;   // the entry the next grant goes to
    wire::Sge remote_iomap_{};  // the peer's iomap table

    // Receiving.
    std::vector<uint32_t> rmsg_; // lengths of the Data messages not read yet (a ring)
    uint32_t rmsg_head_ = 0;
    uint32_t rmsg_tail_ = 0;
    uint32_t recv_offset_ = 0;   // next byte of the receive ring to read
    uint32_t recv_ungranted_;    // bytes read and not granted again yet
    uint32_t grant_offset_;      // the region the next grant names
    uint16_t recv_seq_ = 0;      // messages read
    uint16_t recv_grant_at_;     // when recv_seq_ reaches this, grant again
    uint32_t recvs_to_post_ = 0; // receive WRs consumed since the last repost
};

} // namespace rdmacm::rs
