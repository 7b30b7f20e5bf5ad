#include "dma_engine.h"

namespace nicsim {

int SegmentDma::read(std::span<const DmaSegment> sg, uint64_t offset, uint8_t* dst, size_t len) {
    return for_each_piece(sg, offset, len,
                          [dst](const DmaSegment& s, uint64_t addr, size_t n, size_t at) {
                              return s.memory->read(addr, dst + at, n);
                          });
}

int SegmentDma::write(std::span<const DmaSegment> sg, uint64_t offset, const uint8_t* src,
                      size_t len) {
    return for_each_piece(sg, offset, len,
                          [src](const DmaSegment& s, uint64_t addr, size_t n, size_t at) {
                              return s.memory->write(addr, src + at, n);
                          });
}

} // namespace nicsim
