#include "rsocket_flow.h"

#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rdmacm::rs {

namespace {

uint64_t send_wr_id(wire::Op op, uint32_t data) {
    return wire::imm(op, data);
}

// The peer writes the target buffer with RDMA while we read it: every access is volatile.
uint64_t load64(const uint8_t* p) {
    return *reinterpret_cast<const volatile uint64_t*>(p);
}
uint32_t load32(const uint8_t* p) {
    return *reinterpret_cast<const volatile uint32_t*>(p);
}
void store64(uint8_t* p, uint64_t v) {
    *reinterpret_cast<volatile uint64_t*>(p) = v;
}
void store32(uint8_t* p, uint32_t v) {
    *reinterpret_cast<volatile uint32_t*>(p) = v;
}

} // namespace

Gather::Gather(const iovec* iov, int iovcnt) : iov_(iov), iovcnt_(iovcnt) {
    for (int i = 0; i < iovcnt; ++i)
        remaining_ += iov[i].iov_len;
}

void Gather::copy_to(uint8_t* dst, size_t len) {
    remaining_ -= len;
    while (len) {
        const iovec& v = iov_[index_];
        const size_t n = std::min(len, v.iov_len - offset_);
        std::memcpy(dst, static_cast<const uint8_t*>(v.iov_base) + offset_, n);
        dst += n;
        len -= n;
        offset_ += n;
        if (offset_ == v.iov_len && index_ + 1 < iovcnt_) {
            ++index_;
            offset_ = 0;
        }
    }
}

Scatter::Scatter(const iovec* iov, int iovcnt) : iov_(iov), iovcnt_(iovcnt) {
    for (int i = 0; i < iovcnt; ++i)
        remaining_ += iov[i].iov_len;
}

void Scatter::copy_from(const uint8_t* src, size_t len) {
    remaining_ -= len;
    while (len) {
        const iovec& v = iov_[index_];
        const size_t n = std::min(len, v.iov_len - offset_);
        std::memcpy(static_cast<uint8_t*>(v.iov_base) + offset_, src, n);
        src += n;
        len -= n;
        offset_ += n;
        if (offset_ == v.iov_len && index_ + 1 < iovcnt_) {
            ++index_;
            offset_ = 0;
        }
    }
}

StreamFlow::StreamFlow(QpPort& qp, FlowLimits limits, FlowBuffers buffers)
    : qp_(qp), limits_(limits), buffers_(buffers), sq_free_(limits.sq_size - kCtrlSlots),
      ring_free_(buffers.send_size), rmsg_(limits.rq_size + 1), recv_ungranted_(half()),
      grant_offset_(half()), recv_grant_at_(static_cast<uint16_t>(limits.rq_size / 2)) {}

wire::ConnData StreamFlow::local_conn_data() const {
    wire::ConnData c;
    c.flags = wire::kFlagIomap | (wire::host_is_big_endian() ? wire::kFlagNetOrder : 0);
    c.credits = static_cast<uint16_t>(limits_.rq_size);
    c.target_iomap_size = wire::to_scale(buffers_.iomap_entries);
    c.target_sgl = {reinterpret_cast<uintptr_t>(buffers_.target), buffers_.target_rkey,
                    wire::kTargetSglEntries};
    c.data_buf = {reinterpret_cast<uintptr_t>(buffers_.recv), buffers_.recv_rkey, half()};
    return c;
}

int StreamFlow::post_initial_recvs() {
    for (uint32_t i = 0; i < limits_.rq_size; ++i) {
        ibv_recv_wr wr{};
        wr.wr_id = kRecvWrId;
        if (int err = qp_.post_recv(wr)) {
            errno = err;
            return -1;
        }
    }
    return 0;
}

bool StreamFlow::start(const wire::ConnData& peer) {
    if (peer.version != wire::kVersion || !peer.target_sgl.length || !peer.data_buf.length)
        return false;
    remote_sgl_ = peer.target_sgl;
    remote_sge_ = 1 % remote_sgl_.length; // entry 0 was the header's data_buf
    swap_ = ((peer.flags & wire::kFlagNetOrder) != 0) != wire::host_is_big_endian();
    if (peer.flags & wire::kFlagIomap)
        remote_iomap_ = {remote_sgl_.addr + sizeof(wire::Sge) * remote_sgl_.length, remote_sgl_.key,
                         wire::from_scale(peer.target_iomap_size)};
    set_target_sge(0, peer.data_buf);
    send_limit_ = peer.credits;
    link_ = Link::Up;
    readable_ = writable_ = true;
    return true;
}

wire::Sge StreamFlow::target_sge(uint32_t i) const {
    const uint8_t* p = buffers_.target + i * sizeof(wire::Sge);
    return {load64(p), load32(p + 8), load32(p + 12)};
}

void StreamFlow::set_target_sge(uint32_t i, const wire::Sge& s) {
    uint8_t* p = buffers_.target + i * sizeof(wire::Sge);
    store64(p, s.addr);
    store32(p + 8, s.key);
    store32(p + 12, s.length);
}

wire::IoMap StreamFlow::target_iomap(uint32_t i) const {
    const uint8_t* p =
        buffers_.target + wire::kTargetSglEntries * sizeof(wire::Sge) + i * sizeof(wire::IoMap);
    return {load64(p), {load64(p + 8), load32(p + 16), load32(p + 20)}};
}

void StreamFlow::close_link() {
    if (link_ == Link::Up) link_ = Link::Closed;
    readable_ = writable_ = false;
}

void StreamFlow::fail(int err) {
    link_ = Link::Failed;
    readable_ = writable_ = false;
    error_ = err;
}

void StreamFlow::on_completion(const ibv_wc& wc) {
    if (wc.wr_id & kRecvWrId) {
        if (wc.status != IBV_WC_SUCCESS) return; // flushed: the QP is going
        ++recvs_to_post_;
        if (!(wc.wc_flags & IBV_WC_WITH_IMM)) return; // rsockets send nothing else
        const uint32_t msg = be32toh(wc.imm_data);
        const uint32_t data = wire::data_of(msg);
        switch (static_cast<wire::Op>(wire::op_bits(msg))) {
        case wire::Op::Sgl:
            send_limit_ = static_cast<uint16_t>(data);
            break;
        case wire::Op::IomapSgl: // the entry is in our target buffer already
        case wire::Op::Write:
            break;
        case wire::Op::Ctrl:
            if (data == static_cast<uint32_t>(wire::Ctrl::Disconnect)) {
                close_link();
            } else if (data == static_cast<uint32_t>(wire::Ctrl::Shutdown)) {
                // The peer sends no more; with our side shut too nothing is left.
                if (writable_)
                    readable_ = false;
                else
                    close_link();
            }
            break;
        default: // Data (and the reserved data operations, read as Data)
            rmsg_[rmsg_tail_] = std::min(data, buffers_.recv_size);
            if (++rmsg_tail_ == rmsg_.size()) rmsg_tail_ = 0;
            break;
        }
        return;
    }
    const uint32_t msg = static_cast<uint32_t>(wc.wr_id);
    const uint32_t data = wire::data_of(msg);
    switch (static_cast<wire::Op>(wire::op_bits(msg))) {
    case wire::Op::Sgl:
        ++ctrl_done_;
        break;
    case wire::Op::Ctrl:
        ++ctrl_done_;
        if (data == static_cast<uint32_t>(wire::Ctrl::Disconnect)) close_link();
        break;
    case wire::Op::IomapSgl:
        ++sq_free_;
        ring_free_ += sizeof(wire::IoMap);
        break;
    default: // Data, Write
        ++sq_free_;
        ring_free_ += data;
        break;
    }
    if (wc.status != IBV_WC_SUCCESS && link_ == Link::Up) fail(EIO);
}

int StreamFlow::after_poll() {
    if (link_ != Link::Up) {
        recvs_to_post_ = 0;
        return 0;
    }
    for (; recvs_to_post_; --recvs_to_post_) {
        ibv_recv_wr wr{};
        wr.wr_id = kRecvWrId;
        if (int err = qp_.post_recv(wr)) {
            fail(err);
            errno = err;
            return -1;
        }
    }
    return 0;
}

bool StreamFlow::should_grant() const {
    return link_ == Link::Up && ctrl_slot_free() &&
           (recv_ungranted_ >= half() || static_cast<int16_t>(recv_seq_ - recv_grant_at_) >= 0);
}

int StreamFlow::grant() {
    ++ctrl_sent_;
    recv_grant_at_ = static_cast<uint16_t>(recv_seq_ + limits_.rq_size / 2);
    // The sequence number the peer may send up to: every receive WR we have.
    const uint32_t msg = wire::imm(wire::Op::Sgl, recv_seq_ + limits_.rq_size);
    if (recv_ungranted_ < half()) // credits only: a zero-length write
        return post_write({{}, 0}, 0, msg, true, msg, 0, 0);
    wire::Sge sge{reinterpret_cast<uintptr_t>(buffers_.recv + grant_offset_), buffers_.recv_rkey,
                  half()};
    if (swap_) sge = wire::swapped(sge);
    Posted p{};
    p.nsge = 1;
    if (limits_.inline_size >= sizeof sge) {
        p.sge[0] = {reinterpret_cast<uintptr_t>(&sge), sizeof sge, 0};
    } else {
        // A control slot of its own (after the send ring): grants may be in flight together.
        uint8_t* slot =
            buffers_.send + buffers_.send_size + (ctrl_sent_ % kCtrlSlots) * kCtrlBufSize;
        std::memcpy(slot, &sge, sizeof sge);
        p.sge[0] = {reinterpret_cast<uintptr_t>(slot), sizeof sge, buffers_.send_lkey};
    }
    const int ret = post_write(p, sizeof sge, msg, true, msg,
                               remote_sgl_.addr + remote_sge_ * sizeof(wire::Sge), remote_sgl_.key);
    recv_ungranted_ -= half();
    grant_offset_ += half();
    if (grant_offset_ >= buffers_.recv_size) grant_offset_ = 0;
    if (++remote_sge_ == remote_sgl_.length) remote_sge_ = 0;
    return ret;
}

bool StreamFlow::can_send() const {
    return link_ == Link::Up && sq_free_ && ring_free_ >= kSendLowWater &&
           send_seq_ != send_limit_ && target_sge(target_index_).length != 0;
}

StreamFlow::Posted StreamFlow::copy_into_ring(Gather& src, uint32_t len) {
    Posted p{};
    const uint32_t to_end = buffers_.send_size - ring_head_;
    uint8_t* at = buffers_.send + ring_head_;
    if (len <= to_end) {
        src.copy_to(at, len);
        p.sge[0] = {reinterpret_cast<uintptr_t>(at), len, buffers_.send_lkey};
        p.nsge = 1;
        ring_head_ += len;
        if (ring_head_ == buffers_.send_size) ring_head_ = 0;
    } else {
        src.copy_to(at, to_end);
        src.copy_to(buffers_.send, len - to_end);
        p.sge[0] = {reinterpret_cast<uintptr_t>(at), to_end, buffers_.send_lkey};
        p.sge[1] = {reinterpret_cast<uintptr_t>(buffers_.send), len - to_end, buffers_.send_lkey};
        p.nsge = 2;
        ring_head_ = len - to_end;
    }
    ring_free_ -= len;
    return p;
}

StreamFlow::Posted StreamFlow::copy_into_ring(const void* data, uint32_t len) {
    iovec v{const_cast<void*>(data), len};
    Gather g(&v, 1);
    return copy_into_ring(g, len);
}

int StreamFlow::post_write(const Posted& p, uint32_t len, uint64_t wr_id, bool with_imm,
                           uint32_t imm, uint64_t remote_addr, uint32_t rkey) {
    ibv_send_wr wr{};
    ibv_sge sge[2] = {p.sge[0], p.sge[1]};
    wr.wr_id = wr_id;
    wr.sg_list = p.nsge ? sge : nullptr;
    wr.num_sge = p.nsge;
    wr.opcode = with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    if (with_imm) wr.imm_data = htobe32(imm);
    if (len && len <= limits_.inline_size) wr.send_flags = IBV_SEND_INLINE;
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    if (int err = qp_.post_send(wr)) {
        fail(err);
        errno = err;
        return -1;
    }
    return 0;
}

ssize_t StreamFlow::send_chunk(Gather& src, uint32_t& chunk) {
    size_t len = std::min<size_t>(src.remaining(), chunk);
    if (chunk < src.remaining() && chunk < kMaxChunk) chunk <<= 1;
    // Take the region from the target SGL before the write goes: once the peer has the data it
    // may grant this entry again, and its new descriptor must not be overwritten by ours.
    wire::Sge t = target_sge(target_index_);
    len = std::min<size_t>({len, ring_free_, t.length});
    const uint32_t n = static_cast<uint32_t>(len);
    const uint64_t addr = t.addr;
    t.addr += n;
    t.length -= n;
    set_target_sge(target_index_, t);
    if (!t.length && ++target_index_ == wire::kTargetSglEntries) target_index_ = 0;
    ++send_seq_;
    --sq_free_;
    const Posted p = copy_into_ring(src, n);
    const uint32_t msg = wire::imm(wire::Op::Data, n);
    if (post_write(p, n, msg, true, msg, addr, t.key)) return -1;
    return n;
}

ssize_t StreamFlow::write_direct(Gather& src, uint32_t len, uint64_t remote_addr, uint32_t rkey) {
    const uint32_t n = std::min<uint32_t>(len, ring_free_);
    --sq_free_;
    const Posted p = copy_into_ring(src, n);
    if (post_write(p, n, send_wr_id(wire::Op::Write, n), false, 0, remote_addr, rkey)) return -1;
    return n;
}

int StreamFlow::send_iomap(uint32_t index, const wire::IoMap& entry) {
    const wire::IoMap e = swap_ ? wire::swapped(entry) : entry;
    ++send_seq_;
    --sq_free_;
    const Posted p = copy_into_ring(&e, sizeof e);
    const uint32_t msg = wire::imm(wire::Op::IomapSgl, index);
    return post_write(p, sizeof e, msg, true, msg, remote_iomap_.addr + index * sizeof(wire::IoMap),
                      remote_iomap_.key);
}

size_t StreamFlow::receive(Scatter& dst, bool peek) {
    size_t total = 0;
    uint32_t head = rmsg_head_;
    uint32_t offset = recv_offset_;
    while (dst.remaining() && head != rmsg_tail_) {
        const uint32_t queued = rmsg_[head];
        const uint32_t n = static_cast<uint32_t>(std::min<size_t>(queued, dst.remaining()));
        const uint32_t to_end = buffers_.recv_size - offset;
        if (n <= to_end) {
            dst.copy_from(buffers_.recv + offset, n);
            offset += n;
            if (offset == buffers_.recv_size) offset = 0;
        } else {
            dst.copy_from(buffers_.recv + offset, to_end);
            dst.copy_from(buffers_.recv, n - to_end);
            offset = n - to_end;
        }
        total += n;
        if (n < queued) {
            if (!peek) rmsg_[head] -= n;
            break;
        }
        if (++head == rmsg_.size()) head = 0;
        if (!peek) ++recv_seq_;
    }
    if (!peek) {
        rmsg_head_ = head;
        recv_offset_ = offset;
        recv_ungranted_ += static_cast<uint32_t>(total);
    }
    return total;
}

int StreamFlow::send_ctrl(wire::Ctrl code) {
    ++ctrl_sent_;
    const uint32_t msg = wire::imm(wire::Op::Ctrl, static_cast<uint32_t>(code));
    return post_write({{}, 0}, 0, msg, true, msg, 0, 0);
}

int StreamFlow::send_keepalive() {
    if (link_ != Link::Up || !ctrl_slot_free()) return 0;
    ++ctrl_sent_;
    return post_write({{}, 0}, 0, send_wr_id(wire::Op::Ctrl, uint32_t(wire::Ctrl::Keepalive)),
                      false, 0, 0, 0);
}

bool StreamFlow::all_sends_done() const {
    return link_ != Link::Up ||
           (ctrl_sent_ == ctrl_done_ && sq_free_ == limits_.sq_size - kCtrlSlots);
}

} // namespace rdmacm::rs
