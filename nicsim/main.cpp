// nicsimd: one emulated host's NIC. Serves control sessions on a unix socket and owns the
// host's RoCE v2 port.
#include "config.h"
#include "control/server.h"
#include "engine.h"
#include "net/roce_port.h"
#include "net/udp_link.h"
#include "nic.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <sys/resource.h>

int main(int argc, char** argv) {
    auto config = nicsim::parse_args(argc, argv);
    if (!config) return 2;
    std::signal(SIGPIPE, SIG_IGN);

    std::shared_ptr<spdlog::logger> log;
    try {
        log = spdlog::basic_logger_mt("nicsimd", config->log_file);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nicsimd: cannot open log %s: %s\n", config->log_file.c_str(),
                     e.what());
        return 1;
    }
    log->set_level(spdlog::level::from_str(config->log_level));
    log->set_pattern("%Y-%m-%d %H:%M:%S.%e %L %v");
    log->flush_on(spdlog::level::debug);
    // A NIC is hardware: apps that busy-poll memory (ib_write_lat does) must not starve it of
    // the CPU. A higher scheduling weight lets it run as soon as packets or doorbells arrive.
    if (::setpriority(PRIO_PROCESS, 0, -10) != 0)
        log->info("running at normal priority ({}): busy-polling apps may slow the NIC down",
                  std::strerror(errno));

    try {
        boost::asio::io_context io;
        nicsim::Nic nic(*config);
        nicsim::UdpLink link(io, nicsim::bind_roce_port(config->address, config->udp_port),
                             config->address, config->udp_port, config->faults, config->pcap_file,
                             *log, config->hosts);
        nicsim::Engine engine(io, nic, link, *log);
        nic.set_data_path(&engine);
        nicsim::ControlServer server(io, nic, *log, config->socket_path);
        boost::asio::signal_set signals(io, SIGINT, SIGTERM);
        signals.async_wait([&](const boost::system::error_code&, int sig) {
            log->info("signal {}: shutting down", sig);
            server.shutdown();
            io.stop();
        });
        log->info("{} up: address {} gid {} mtu {} control socket {}", nic.device().name(),
                  nic.device().address_string(), nic.device().gid_string(), config->mtu,
                  config->socket_path);
        io.run();
        nic.set_data_path(nullptr);
    } catch (const std::exception& e) {
        log->error("fatal: {}", e.what());
        std::fprintf(stderr, "nicsimd: %s\n", e.what());
        return 1;
    }
    log->info("stopped");
    return 0;
}
