// One control session: a client's connection, its requests and everything it owns.
#pragma once

#include "cm/cm_client.h"
#include "data/shared_memory.h"
#include "emu/ipc/protocol.h"
#include "emu/ipc/socket_io.h"
#include "nic/nic.h"
#include "objects/session_objects.h"
#include "support/unique_fd.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <spdlog/logger.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace nicsim {

class Session : public std::enable_shared_from_this<Session> {
  public:
    using EndHandler = std::function<void(Session&)>;
    // `status` builds the host's status document for Status requests.
    Session(boost::asio::io_context& io, Nic& nic, spdlog::logger& log, int sock,
            std::function<std::string()> status, EndHandler on_end);

    void start();
    // Ends the session: frees everything it owns and closes the connection.
    void end(const std::string& why);

    uint32_t id() const { return id_; }
    pid_t pid() const { return pid_; }
    const std::string& comm() const { return comm_; }
    bool is_context() const { return context_; }
    // A CM session's state (Hello with kHelloCm: rdma_cm), else nullptr.
    const cm::CmClient* cm_client() const { return cm_.get(); }
    bool net_raw() const { return net_raw_; }
    // The descriptors the request being handled carried (beyond its sender's memory).
    std::vector<UniqueFd> take_request_fds() { return std::move(request_fds_); }
    const SessionObjects& objects() const { return objects_; }
    const std::string& prefix() const { return prefix_; }

    // For the verb dispatcher.
    Nic& nic() { return nic_; }
    SessionObjects& objects() { return objects_; }
    spdlog::logger& log() { return log_; }
    // Sends the reply with `fds` (closed afterwards, here: the app has its own copies) and, for
    // a refusal, the id of its reason in the session's ring.
    void send_reply(const emu::ipc::Header& req, int err, const void* body, size_t len,
                    const std::vector<UniqueFd>& fds = {}, uint32_t reason = 0);

  private:
    void wait_readable();
    void on_readable();
    void take_descriptors(pid_t sender, emu::ipc::PassedFds& fds);
    void handle_request(const char* msg, size_t len, pid_t sender);
    void hello(const emu::ipc::Header& h, const emu::ipc::HelloReq& req);
    emu::ipc::HelloReply hello_reply() const;
    int open_context(std::vector<UniqueFd>& fds);
    void reopen_context(const emu::ipc::Header& h, pid_t sender);
    int joined_async_socket(pid_t pid);
    void wait_doorbell();

    boost::asio::posix::stream_descriptor sock_;
    Nic& nic_;
    spdlog::logger& log_;
    std::function<std::string()> status_;
    EndHandler on_end_;
    uint32_t id_;
    pid_t pid_ = 0;
    std::string comm_;
    std::string prefix_;
    bool greeted_ = false;
    bool context_ = false;
    bool ended_ = false;
    std::vector<UniqueFd> request_fds_;
    bool net_raw_ = false;  // the process held CAP_NET_RAW when it opened the device
    UniqueFd async_end_;    // async events for the app are written here
    UniqueFd async_client_; // the app's end, kept for ReopenContext
    UniqueFd page_fd_;      // the doorbell page's memfd, kept for ReopenContext
    // Processes that joined (ReopenContext): the app's end of each one's own async-event socket
    // (the NIC's end is in objects_.joined_async_fds).
    std::map<pid_t, UniqueFd> joined_async_clients_;
    UniqueFd doorbell_; // the app kicks this eventfd after posting work
    SharedMemory doorbell_page_;
    std::unique_ptr<boost::asio::posix::stream_descriptor> doorbell_wait_;
    SessionObjects objects_;
    std::unique_ptr<cm::CmClient> cm_;
};

} // namespace nicsim
