// A knowledge server's address as the user writes it: grpcs://HOST:PORT (TLS) or grpc://HOST:PORT
// (plaintext, which a client accepts only for a loopback host: a token sent in the clear over a
// real network is a token given away).
#pragma once

#include <string>

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

// localhost, 127.0.0.0/8 and ::1.
bool is_loopback_host(const std::string& host);

}  // namespace mnemo::detail
