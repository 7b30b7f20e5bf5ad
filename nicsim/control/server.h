// The control socket: accepts sessions and keeps the live ones for status.
#pragma once

#include "control/peer_uid_policy.h"
#include "nic/nic.h"
#include "session.h"
#include "support/log_rate_limit.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <spdlog/logger.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace nicsim {

class ControlServer {
  public:
    // Binds `path` (SOCK_SEQPACKET) with exactly `mode`, in a directory only its owner reaches
    // (emu/private_files.h). Throws std::runtime_error saying why when the directory is refused,
    // another daemon serves `path`, something else is there, or it cannot be bound. Connections
    // from uids `policy` does not allow are closed at once and logged.
    ControlServer(boost::asio::io_context& io, Nic& nic, spdlog::logger& log, std::string path,
                  mode_t mode, PeerUidPolicy policy);
    ~ControlServer();

    // The host's status: device, address and the live sessions with their object counts.
    std::string status_json() const;
    // Ends every session (daemon shutdown).
    void shutdown();

  private:
    void accept_next();
    // Whether the peer of the accepted `fd` may open a session; logs a refusal.
    bool peer_allowed(int fd);

    boost::asio::io_context& io_;
    Nic& nic_;
    spdlog::logger& log_;
    std::string path_;
    PeerUidPolicy policy_;
    LogRateLimit refusals_{10}; // refusal lines a second
    boost::asio::posix::stream_descriptor listener_;
    std::map<uint32_t, std::shared_ptr<Session>> sessions_;
};

} // namespace nicsim
