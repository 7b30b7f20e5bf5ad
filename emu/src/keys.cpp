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

uint32_t KeyAllocator::allocate() {
    // Collisions with live keys are rare (size()/2^32 per draw); drawing again keeps every
    // live key unique without making the next key depend on the previous ones.
    for (;;) {
        uint32_t key = source_();
        if (reserved(key)) continue;
        if (live_.insert(key).second) return key;
    }
}

bool KeyAllocator::claim(uint32_t key) {
    if (reserved(key)) return false;
    return live_.insert(key).second;
}

bool KeyAllocator::release(uint32_t key) {
    return live_.erase(key) != 0;
}

} // namespace emu
