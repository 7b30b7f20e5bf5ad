// A memfd mapped into the daemon, to be mapped by the app as well (rings, doorbell page).
#pragma once

#include "support/unique_fd.h"

#include <cstddef>
#include <utility>

namespace nicsim {

class SharedMemory {
  public:
    SharedMemory() = default;
    SharedMemory(SharedMemory&& o) noexcept
        : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
    SharedMemory& operator=(SharedMemory&& o) noexcept;
    ~SharedMemory();

    // Creates a zeroed region of `bytes`. Returns 0 or an errno; on success *fd is the memfd
    // to pass to the app (the mapping outlives it).
    static int create(const char* name, size_t bytes, SharedMemory& out, UniqueFd& fd);

    void* data() const { return data_; }
    size_t size() const { return size_; }

  private:
    void* data_ = nullptr;
    size_t size_ = 0;
};

} // namespace nicsim
