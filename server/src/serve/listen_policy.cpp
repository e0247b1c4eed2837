#include "serve/listen_policy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "mnemo/io/printable.hpp"

namespace mnemo::kb {
namespace {

// The host part of HOST:PORT or [V6]:PORT; false when there is no port.
bool split_host(const std::string& listen, std::string* host) {
    if (!listen.empty() && listen.front() == '[') {
        const size_t close = listen.find(']');
        if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') return false;
        *host = listen.substr(1, close - 1);
    } else {
        const size_t colon = listen.rfind(':');
        if (colon == std::string::npos || listen.find(':') != colon) return false;  // bare v6 needs brackets
        *host = listen.substr(0, colon);
    }
    const std::string port = listen.substr(listen.rfind(':') + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char c : port)
        if (c < '0' || c > '9') return false;
    if (std::stoul(port) > 65535) return false;
    return !host->empty();
}

}  // namespace

std::string listen_address_problem(const std::string& listen) {
    std::string host;
    if (split_host(listen, &host)) return "";
    const std::string shown = "--listen '" + printable(listen, 256) + "'";
    const size_t colon = listen.rfind(':');
    const std::string port = colon == std::string::npos ? "" : listen.substr(colon + 1);
    if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos || host.empty())
        return shown + " is not HOST:PORT or [V6]:PORT (a host, then a port number; an IPv6 address goes in brackets)";
    return shown + ": port " + printable(port, 32) + " is out of range; a port is 0..65535 (0: the system picks one)";
}

bool is_loopback_listen_address(const std::string& listen) {
    std::string host;
    if (!split_host(listen, &host)) return false;
    if (host == "localhost") return true;
    in_addr v4{};
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    in6_addr v6{};
    if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
        return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
    }
    return false;
}

std::string transport_problem(const TransportChoice& c) {
    std::string host;
    if (c.listen.empty()) return "missing --listen ADDR:PORT";
    if (std::string problem = listen_address_problem(c.listen); !problem.empty()) return problem;
    if (c.tls && c.insecure) return "--insecure and --tls-cert/--tls-key contradict each other; give one";
    if (!c.tls && !c.insecure)
        return "no TLS: give --tls-cert FILE --tls-key FILE, or --insecure to serve plaintext on a loopback address";
    const bool loopback = is_loopback_listen_address(c.listen);
    if (c.insecure && !loopback)
        return "--insecure serves plaintext, which only a loopback address may (127.0.0.0/8, [::1], localhost); '" + c.listen +
               "' is not one: use --tls-cert and --tls-key";
    if (c.tokens && c.no_auth) return "--tokens and --no-auth contradict each other; give one";
    if (!c.tokens && !c.no_auth) return "no access tokens: give --tokens FILE (mnemo-kb token new makes one)";
    if (c.no_auth && !(c.insecure && loopback)) return "--no-auth is allowed only with --insecure on a loopback address";
    return "";
}

}  // namespace mnemo::kb
