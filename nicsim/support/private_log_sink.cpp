#include "support/private_log_sink.h"

#include <cerrno>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace nicsim {
namespace {

constexpr size_t kBufferBytes = 64 * 1024;

emu::OwnedFd opened_or_throw(emu::Opened opened) {
    if (!opened.fd) throw std::runtime_error(opened.error);
    return std::move(opened.fd);
}

} // namespace

PrivateLogSink::PrivateLogSink(const std::string& path, uint64_t max_bytes, int files)
    : path_(path), max_bytes_(max_bytes), files_(files) {
    auto [dir_path, name] = emu::split_path(path);
    name_ = name;
    dir_ = opened_or_throw(emu::open_private_dir(dir_path));
    file_ = opened_or_throw(emu::append_private_file(dir_.get(), name_, path_, 0600));
    struct stat st {};
    if (::fstat(file_.get(), &st) == 0) size_ = static_cast<uint64_t>(st.st_size);
}

PrivateLogSink::~PrivateLogSink() {
    flush_();
}

std::string PrivateLogSink::numbered(int i) const {
    return i == 0 ? name_ : name_ + "." + std::to_string(i);
}

void PrivateLogSink::sink_it_(const spdlog::details::log_msg& msg) {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    if (size_ > 0 && size_ + line.size() > max_bytes_) rotate();
    buffer_.append(line.data(), line.size());
    size_ += line.size();
    if (buffer_.size() >= kBufferBytes) flush_();
}

void PrivateLogSink::flush_() {
    const char* p = buffer_.data();
    size_t left = buffer_.size();
    while (left > 0 && file_) {
        ssize_t n = ::write(file_.get(), p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; // a log that cannot be written has nowhere to say so
        p += n;
        left -= static_cast<size_t>(n);
    }
    buffer_.clear();
}

void PrivateLogSink::rotate() {
    flush_();
    // Renames within the checked directory: no name in it is anyone else's.
    for (int i = files_ - 1; i > 0; --i)
        ::renameat(dir_.get(), numbered(i - 1).c_str(), dir_.get(), numbered(i).c_str());
    emu::Opened fresh =
        emu::create_private_file(dir_.get(), name_, path_, O_WRONLY | O_APPEND, 0600);
    // Without a new file the log goes on in the renamed one rather than nowhere.
    if (fresh.fd) file_ = std::move(fresh.fd);
    size_ = 0;
}

} // namespace nicsim
