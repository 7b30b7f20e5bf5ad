#include "http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <memory>

namespace rdmaemu {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr auto kDeadline = std::chrono::seconds(5);

class Connection : public std::enable_shared_from_this<Connection> {
  public:
    Connection(tcp::socket socket, const HttpHandler& handler)
        : stream_(std::move(socket)), handler_(handler) {}

    void start() {
        stream_.expires_after(kDeadline);
        http::async_read(stream_, buffer_, request_,
                         [self = shared_from_this()](beast::error_code ec, size_t) {
                             if (!ec) self->answer();
                         });
    }

  private:
    void answer() {
        HttpResponse r;
        if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
            r = {405, "text/plain; charset=utf-8", "only GET\n"};
        } else {
            std::string target(request_.target());
            r = handler_(target.substr(0, target.find('?')));
        }
        response_.result(static_cast<unsigned>(r.status));
        response_.version(request_.version());
        response_.set(http::field::server, "rdmaemu ui");
        response_.set(http::field::content_type, r.content_type);
        response_.set(http::field::cache_control, "no-store");
        response_.keep_alive(false);
        if (request_.method() != http::verb::head) response_.body() = std::move(r.body);
        response_.prepare_payload();
        stream_.expires_after(kDeadline);
        http::async_write(stream_, response_,
                          [self = shared_from_this()](beast::error_code, size_t) {
                              beast::error_code ignored;
                              self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                          });
    }

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    http::request<http::empty_body> request_;
    http::response<http::string_body> response_;
    const HttpHandler& handler_;
};

void accept_next(tcp::acceptor& acceptor, const HttpHandler& handler) {
    acceptor.async_accept([&acceptor, &handler](beast::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted) return;
        if (!ec) std::make_shared<Connection>(std::move(socket), handler)->start();
        accept_next(acceptor, handler);
    });
}

} // namespace

std::optional<std::string> serve_http(uint16_t port, const HttpHandler& handler,
                                      const std::function<void(uint16_t)>& on_listening) {
    asio::io_context io;
    tcp::acceptor acceptor(io);
    beast::error_code ec;
    const tcp::endpoint at(asio::ip::address_v4::loopback(), port);
    acceptor.open(at.protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(at, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return "cannot listen on 127.0.0.1:" + std::to_string(port) + ": " + ec.message();
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](beast::error_code, int) {
        acceptor.close();
        io.stop();
    });
    on_listening(acceptor.local_endpoint().port());
    accept_next(acceptor, handler);
    io.run();
    return std::nullopt;
}

} // namespace rdmaemu
