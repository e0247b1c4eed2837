#include "kb/kb_url.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "mnemo/error.hpp"
#include "mnemo/kb/kb_source.hpp"

namespace mnemo::detail {
namespace {

// Host names are compared without case (DNS ignores it).
std::string lowercase(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
}

}  // namespace

bool is_loopback_host(const std::string& host) {
    if (host == "localhost") return true;
    in_addr v4{};
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    in6_addr v6{};
    if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0;
    return false;
}

KbUrl parse_kb_url(const std::string& url) {
    const std::string where = "knowledge server URL '" + url + "'";
    KbUrl u;
    u.url = url;
    std::string rest;
    if (url.rfind("grpcs://", 0) == 0) {
        rest = url.substr(8);
    } else if (url.rfind("grpc://", 0) == 0) {
        u.tls = false;
        rest = url.substr(7);
    } else {
        throw Error(where + ": expected grpcs://HOST:PORT (TLS) or grpc://HOST:PORT (plaintext, loopback only)");
    }
    if (!rest.empty() && rest.back() == '/') rest.pop_back();
    std::string port;
    if (!rest.empty() && rest.front() == '[') {  // [v6]:port
        const size_t close = rest.find(']');
        if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
            throw Error(where + ": an IPv6 host is written [ADDRESS]:PORT");
        u.host = rest.substr(1, close - 1);
        port = rest.substr(close + 2);
    } else {
        const size_t colon = rest.rfind(':');
        if (colon == std::string::npos) throw Error(where + ": the port is missing (HOST:PORT)");
        u.host = rest.substr(0, colon);
        port = rest.substr(colon + 1);
        if (u.host.find(':') != std::string::npos) throw Error(where + ": an IPv6 host is written [ADDRESS]:PORT");
    }
    if (u.host.empty()) throw Error(where + ": the host is missing");
    if (u.host.find_first_of("/?#@ ") != std::string::npos) throw Error(where + ": '" + u.host + "' is not a host name");
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
        throw Error(where + ": the port must be a number, got '" + port + "'");
    u.port = std::stoi(port);
    if (u.port < 1 || u.port > 65535) throw Error(where + ": the port must be 1..65535");
    if (!u.tls && !is_loopback_host(u.host))
        throw Error(where + ": plaintext grpc:// is only allowed to a loopback host (localhost, 127.0.0.1, ::1); use grpcs:// "
                            "(TLS) for '" + u.host + "'");
    u.target = (u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host) + ":" + std::to_string(u.port);
    return u;
}

std::vector<KbUrl> parse_kb_urls(const std::vector<std::string>& urls) {
    if (urls.empty()) throw Error("no knowledge server URL given");
    std::vector<KbUrl> out;
    for (const std::string& url : urls) {
        KbUrl u = parse_kb_url(url);
        for (const KbUrl& seen : out) {
            if (seen.tls != u.tls)
                throw Error("knowledge servers '" + seen.url + "' and '" + u.url + "' use different schemes (" +
                            (seen.tls ? "grpcs" : "grpc") + "://, " + (u.tls ? "grpcs" : "grpc") +
                            "://): the servers of one bank take the same token, so all use TLS or none");
            if (lowercase(seen.target) == lowercase(u.target)) throw Error("knowledge server '" + u.url + "' is given twice");
        }
        out.push_back(std::move(u));
    }
    return out;
}

}  // namespace mnemo::detail

namespace mnemo {

void check_kb_urls(const std::vector<std::string>& urls) { detail::parse_kb_urls(urls); }

}  // namespace mnemo
