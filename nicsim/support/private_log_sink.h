// The daemon's log file: 0600 and never opened through a link (emu/private_files.h), appended to
// (rdmaemu up makes it new for each start and sends the daemon's stdout and stderr there too),
// and rotated when it would pass `max_bytes`: nicsimd.log becomes nicsimd.log.1, .1 becomes .2,
// and so on up to `files` files in all; the oldest is dropped. spdlog's own rotating sink opens
// with fopen(), which follows links and takes its mode from the umask.
#pragma once

#include "emu/private_files.h"

#include <spdlog/sinks/base_sink.h>

#include <cstdint>
#include <mutex>
#include <string>

namespace nicsim {

class PrivateLogSink final : public spdlog::sinks::base_sink<std::mutex> {
  public:
    // Throws std::runtime_error saying why when `path` or its directory is refused.
    PrivateLogSink(const std::string& path, uint64_t max_bytes, int files);
    ~PrivateLogSink() override;

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override;
    void flush_() override;

  private:
    void rotate();
    std::string numbered(int i) const; // name_, name_.1, name_.2, ...

    std::string path_;
    std::string name_;
    uint64_t max_bytes_;
    int files_;
    emu::OwnedFd dir_;
    emu::OwnedFd file_;
    uint64_t size_ = 0;  // in the file and in buffer_
    std::string buffer_; // formatted lines not yet written
};

} // namespace nicsim
