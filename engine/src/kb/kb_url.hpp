// A knowledge server's address as the user writes it: grpcs://HOST:PORT (TLS) or grpc://HOST:PORT
// (plaintext, which a client accepts only for a loopback host: a token sent in the clear over a
// real network is a token given away).
#pragma once

#include <string>
#include <vector>

namespace mnemo::detail {

struct KbUrl {
    std::string url;     // as given, for messages
    bool tls = true;
    std::string host;    // without IPv6 brackets
    int port = 0;
    std::string target;  // what gRPC dials: "host:port" or "[v6]:port"
};

// Throws mnemo::Error naming the URL and what is wrong (scheme, host, port, plaintext to a host
// that is not a loopback address).
KbUrl parse_kb_url(const std::string& url);

// The servers of one client (KbSourceOptions::urls): each URL parsed, all of one scheme (a token
// sent in the clear to some of them would be given away to all; a mixed list is refused naming
// the two URLs), no server twice (the same HOST:PORT spelled alike). At least one URL.
std::vector<KbUrl> parse_kb_urls(const std::vector<std::string>& urls);

// localhost, 127.0.0.0/8 and ::1.
bool is_loopback_host(const std::string& host);

}  // namespace mnemo::detail
