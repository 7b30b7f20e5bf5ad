// The control socket: accepts sessions and keeps the live ones for status.
#pragma once

#include "nic.h"
#include "session.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <spdlog/logger.h>

#include <map>
#include <memory>
#include <string>

namespace nicsim {

class ControlServer {
  public:
    // Binds `path` (SOCK_SEQPACKET). Throws std::runtime_error when another daemon serves it or
    // it cannot be bound.
    ControlServer(boost::asio::io_context& io, Nic& nic, spdlog::logger& log, std::string path);
    ~ControlServer();

    // The host's status: device, address and the live sessions with their object counts.
    std::string status_json() const;
    // Ends every session (daemon shutdown).
    void shutdown();

  private:
    void accept_next();

    boost::asio::io_context& io_;
    Nic& nic_;
    spdlog::logger& log_;
    std::string path_;
    boost::asio::posix::stream_descriptor listener_;
    std::map<uint32_t, std::shared_ptr<Session>> sessions_;
};

} // namespace nicsim
