#include "kb/kb_endpoints.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>

namespace mnemo::detail {
namespace {

bool is_address(const std::string& host) {
    in_addr v4{};
    in6_addr v6{};
    return inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

std::string dial_target(const std::string& host, int port) {
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace

std::vector<std::string> resolve_host(const std::string& host) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return {};
    std::vector<std::string> out;
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        char text[INET6_ADDRSTRLEN] = {};
        const void* raw = a->ai_family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
                          : a->ai_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr)
                                                     : nullptr;
        if (raw && inet_ntop(a->ai_family, raw, text, sizeof text)) out.emplace_back(text);
    }
    freeaddrinfo(found);
    return out;
}

std::vector<KbEndpoint> kb_endpoints(const std::vector<KbUrl>& urls, const KbResolver& resolve) {
    std::vector<KbEndpoint> out;
    auto add = [&](KbEndpoint e) {
        for (const KbEndpoint& seen : out)
            if (seen.target == e.target && seen.tls_name == e.tls_name) return;
        out.push_back(std::move(e));
    };
    for (const KbUrl& u : urls) {
        std::vector<std::string> addresses;
        // Plaintext is loopback only (parse_kb_url): one server. localhost's two addresses (127.0.0.1,
        // ::1) are one machine, where a server usually listens on one of them: gRPC tries both.
        if (u.tls && u.host != "localhost" && !is_address(u.host)) {
            for (std::string& a : resolve(u.host))
                if (std::find(addresses.begin(), addresses.end(), a) == addresses.end()) addresses.push_back(std::move(a));
        }
        if (addresses.size() < 2) {
            add({u, u.url, u.target, ""});
            continue;
        }
        for (const std::string& a : addresses) add({u, u.url + " (" + a + ")", dial_target(a, u.port), u.host});
    }
    return out;
}

}  // namespace mnemo::detail
