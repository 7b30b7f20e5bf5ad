// The packets a host sends to itself (both QPs on one emulated host): a NIC turns them around
// inside (mlx5's internal loopback), so they never cross a socket. The link queues them during
// a turn of the event loop and hands them to the receiver when the turn ends; packets sent while
// those are handled wait for the next turn (no recursion, and a turn's work stays bounded).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nicsim {

class LoopbackQueue {
  public:
    struct Packet {
        size_t offset, length;
        uint8_t tos;
    };

    void push(const uint8_t* data, size_t len, uint8_t tos) {
        packets_.push_back({bytes_.size(), len, tos});
        bytes_.insert(bytes_.end(), data, data + len); // one copy: resize() would zero it first
    }
    bool empty() const { return packets_.empty(); }
    size_t size() const { return packets_.size(); }

    // Calls deliver(data, len, tos) for every packet queued so far, oldest first; what it
    // queues meanwhile stays for the next call. The buffers are kept for reuse.
    template <class Deliver> void deliver_all(Deliver&& deliver) {
        std::swap(bytes_, delivering_bytes_);
        std::swap(packets_, delivering_);
        for (const Packet& p : delivering_)
            deliver(delivering_bytes_.data() + p.offset, p.length, p.tos);
        delivering_.clear();
        delivering_bytes_.clear();
    }

  private:
    std::vector<uint8_t> bytes_, delivering_bytes_;
    std::vector<Packet> packets_, delivering_;
};

} // namespace nicsim
