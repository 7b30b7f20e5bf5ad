#include "dma_engine.h"

#include <cerrno>

namespace nicsim {
namespace {

template <typename Move> int transfer(std::span<const DmaSegment> segs, size_t len, Move move) {
    size_t done = 0;
    for (const DmaSegment& s : segs) {
        if (s.length == 0) continue;
        if (!s.memory || s.length > len - done) return EINVAL;
        if (int err = move(s, done)) return err;
        done += s.length;
    }
    return done == len ? 0 : EINVAL;
}

} // namespace

int SegmentDma::read(std::span<const DmaSegment> src, uint8_t* dst, size_t len) {
    return transfer(src, len, [dst](const DmaSegment& s, size_t at) {
        return s.memory->read(s.addr, dst + at, s.length);
    });
}

int SegmentDma::write(std::span<const DmaSegment> dst, const uint8_t* src, size_t len) {
    return transfer(dst, len, [src](const DmaSegment& s, size_t at) {
        return s.memory->write(s.addr, src + at, s.length);
    });
}

} // namespace nicsim
