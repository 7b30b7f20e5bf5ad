// nicsimd: one emulated host's NIC. Serves control sessions on a unix socket and owns the
// host's RoCE v2 port.
#include "cm/cm_agent.h"
#include "cm/gsi_port.h"
#include "control/server.h"
#include "daemon/engine.h"
#include "daemon/poll_loop.h"
#include "diag/peer_reasons.h"
#include "net/roce_port.h"
#include "net/udp_link.h"
#include "nic/config.h"
#include "nic/nic.h"
#include "support/private_log_sink.h"
#include "transport/engines.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <sys/resource.h>
#include <unistd.h>

namespace {

// 3 files of 64 MiB: enough for a long trace-level run, bounded on a small disk.
constexpr uint64_t kLogFileBytes = 64ull << 20;
constexpr int kLogFiles = 3;

// The capture, when asked for; a file or directory refused is fatal, as for the log and socket.
std::optional<nicsim::PcapWriter> open_capture(const nicsim::Config& config, spdlog::logger& log) {
    nicsim::PcapWriter pcap;
    if (config.pcap_file.empty()) return pcap;
    // Called once: the capture stopped at its limit or on a write error.
    auto on_stop = [&log](const std::string& why) { log.warn("pcap: {}", why); };
    if (pcap.open(config.pcap_file, config.pcap_limit, on_stop)) return pcap;
    log.error("fatal: cannot capture: {}", pcap.error());
    std::fprintf(stderr, "nicsimd: cannot capture: %s\n", pcap.error().c_str());
    return std::nullopt;
}

} // namespace

int main(int argc, char** argv) {
    // A daemon keeps none of its starter's descriptors beyond stdin, stdout and stderr: a
    // script's lock or pipe must not stay open for the daemon's whole life.
    ::close_range(3, ~0U, 0);
    int exit_status = 2;
    auto config = nicsim::parse_args(argc, argv, &exit_status);
    if (!config) return exit_status;
    std::signal(SIGPIPE, SIG_IGN);

    std::shared_ptr<spdlog::logger> log;
    try {
        log = std::make_shared<spdlog::logger>(
            "nicsimd",
            std::make_shared<nicsim::PrivateLogSink>(config->log_file, kLogFileBytes, kLogFiles));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nicsimd: cannot open log %s: %s\n", config->log_file.c_str(),
                     e.what());
        return 1;
    }
    log->set_level(spdlog::level::from_str(config->log_level));
    log->set_pattern("%Y-%m-%d %H:%M:%S.%e %L %v");
    log->flush_on(spdlog::level::debug);
    // A NIC is hardware: apps that busy-poll memory (ib_write_lat does) must not starve it of
    // the CPU.
    const bool realtime = nicsim::PollLoop::claim_cpu(*log, config->scheduling);

    auto pcap = open_capture(*config, *log);
    if (!pcap) return 1;
    try {
        boost::asio::io_context io;
        nicsim::Nic nic(*config);
        nic.set_realtime(realtime);
        nicsim::UdpLink link(io, nicsim::bind_roce_port(config->address, config->udp_port),
                             config->address, config->udp_port, config->faults, std::move(*pcap),
                             *log, config->hosts);
        link.count_into(&nic.hw());
        nic.set_link_receive_buffer(link.receive_buffer_bytes());
        if (const uint64_t window = nicsim::transport::host_window_bytes(nic);
            window < nicsim::transport::kHostWindowBytes)
            log->info("the host's window is {} KiB, not {} KiB: half the link's receive buffer, "
                      "so that a burst of every QP together fits in the peer's",
                      window / 1024, nicsim::transport::kHostWindowBytes / 1024);
        link.set_ipv4_id_policy(config->icrc_ipv4);
        nicsim::PeerReasons peers;
        std::string peers_error;
        if (!peers.open(config->diag_dir, config->address, &peers_error))
            throw std::runtime_error(peers_error);
        nicsim::Engine engine(io, nic, link, *log, &peers);
        nic.set_data_path(&engine);
        nicsim::cm::GsiPort gsi(io, link);
        nicsim::cm::CmAgent cm(gsi, nicsim::cm::config_for(nic.device()), *log);
        gsi.attach(cm);
        engine.set_gsi([&gsi](const emu::wire::IpEndpoint& from, const emu::wire::Headers& h,
                              const uint8_t* payload,
                              size_t len) { gsi.receive(from, h, payload, len); });
        nic.set_cm(&cm);
        // Shared with --allow-uid: the socket lets everyone connect, the uid check decides.
        const mode_t socket_mode = config->allowed_uids.empty() ? 0600 : 0666;
        nicsim::ControlServer server(io, nic, *log, config->socket_path, socket_mode,
                                     nicsim::PeerUidPolicy(::geteuid(), config->allowed_uids));
        boost::asio::signal_set signals(io, SIGINT, SIGTERM);
        signals.async_wait([&](const boost::system::error_code&, int sig) {
            log->info("signal {}: shutting down", sig);
            server.shutdown();
            io.stop();
        });
        log->info("{} up: address {} gid {} mtu {} control socket {}", nic.device().name(),
                  nic.device().address_string(), nic.device().gid_string(), config->mtu,
                  config->socket_path);
        // The default window is guarded (poll_window.h); one asked for is not.
        const uint64_t poll_us =
            config->poll_us.value_or(nicsim::Config::default_poll_us(realtime));
        const bool guarded = !config->poll_us;
        log->info("polls {} us after work before it sleeps{}", poll_us,
                  guarded && poll_us ? ", unless polling costs an app its CPU" : "");
        nicsim::PollLoop(io, engine, nic.poll_counters(), *log,
                         nicsim::PollWindow(poll_us, guarded), realtime)
            .run();
        nic.set_cm(nullptr);
        nic.set_data_path(nullptr);
    } catch (const std::exception& e) {
        log->error("fatal: {}", e.what());
        std::fprintf(stderr, "nicsimd: %s\n", e.what());
        return 1;
    }
    log->info("stopped");
    return 0;
}
