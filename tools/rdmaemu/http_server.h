// A small HTTP/1.1 server for `rdmaemu ui` (Boost.Beast on one Asio thread): GET only, one
// response per connection, each read and write with a deadline, so an idle or slow browser
// connection never holds the others. It listens on a loopback address only: the page shows a
// user's keys and processes and has no login.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace rdmaemu {

struct HttpResponse {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
};

using HttpHandler = std::function<HttpResponse(const std::string& path)>;

// Serves `handler` on 127.0.0.1:`port` (0: one the kernel picks) until SIGINT or SIGTERM.
// `on_listening` is called once with the port bound. Returns an error message when it cannot
// listen.
std::optional<std::string> serve_http(uint16_t port, const HttpHandler& handler,
                                      const std::function<void(uint16_t)>& on_listening);

} // namespace rdmaemu
