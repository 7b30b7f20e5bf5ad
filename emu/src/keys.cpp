#include "emu/keys.h"

#include <sys/random.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace emu {
namespace {

constexpr uint32_t kNoKey = 0;
constexpr uint32_t kAllOnes = 0xFFFFFFFF;

bool reserved(uint32_t key) {
    return key == kNoKey || key == kAllOnes;
}

} // namespace

uint32_t KernelRandom::operator()() {
    if (next_ == pool_.size()) {
        // Without GRND_NONBLOCK: blocks only before the kernel's pool is first seeded (early
        // boot). Reads of up to 256 bytes are never short once it is.
        auto* bytes = reinterpret_cast<unsigned char*>(pool_.data());
        size_t got = 0;
        while (got < sizeof pool_) {
            ssize_t n = ::getrandom(bytes + got, sizeof pool_ - got, 0);
            if (n > 0)
                got += static_cast<size_t>(n);
            else if (errno != EINTR)
                throw std::system_error(errno, std::generic_category(), "getrandom");
        }
        next_ = 0;
    }
    return pool_[next_++];
}

KeyAllocator::KeyAllocator(Source source) : source_(std::move(source)) {}

bool KeyAllocator::taken(uint32_t key) const {
    return reserved(key) || live_.count(key) || blocks_.count(key >> 8);
}

uint32_t KeyAllocator::allocate() {
    // Collisions with live keys are rare (size()/2^32 per draw); drawing again keeps every
    // live key unique without making the next key depend on the previous ones.
    for (;;) {
        uint32_t key = source_();
        if (taken(key)) continue;
        live_.insert(key);
        return key;
    }
}

uint32_t KeyAllocator::allocate_block() {
    constexpr uint32_t kLastBlock = 0xFFFFFFFFu >> 8;
    for (;;) {
        uint32_t key = source_();
        uint32_t block = key >> 8;
        // The blocks holding 0 and 0xFFFFFFFF are never a window's: each of its keys must be
        // one the consumer may pick.
        if (block == 0 || block == kLastBlock || blocks_.count(block)) continue;
        bool clear = true;
        for (uint32_t low = 0; low < 256 && clear; ++low)
            clear = !live_.count(block << 8 | low);
        if (!clear) continue;
        blocks_.insert(block);
        return key;
    }
}

bool KeyAllocator::release_block(uint32_t key) {
    return blocks_.erase(key >> 8) != 0;
}

bool KeyAllocator::claim(uint32_t key) {
    if (taken(key)) return false;
    return live_.insert(key).second;
}

bool KeyAllocator::release(uint32_t key) {
    return live_.erase(key) != 0;
}

} // namespace emu
