// Where the client's calls go: one endpoint per knowledge server. A URL is one endpoint, except a
// TLS URL whose host name resolves to several addresses: each address is then an endpoint of its
// own (its own channel, health and backoff), so a DNS name listing the `mnemo-kb serve` nodes of
// a bank spreads the chunks over them and survives one of them dying, as a list of --kb URLs does.
//
// Why resolve here rather than hand gRPC "dns:///HOST" with its round_robin policy (which gRPC
// 1.51 has): round_robin picks a backend per call, so the client could not keep a chunk's calls on
// one node, nor mark one node down, back it off and probe it, nor say which node failed. The cost:
// the addresses are those of connect time; a changed DNS record needs a new connection.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kb/kb_url.hpp"

namespace mnemo::detail {

struct KbEndpoint {
    KbUrl url;            // the URL it came from
    std::string name;     // for messages: the URL, or "URL (ADDRESS)" for one address of a name
    std::string target;   // what gRPC dials: "host:port", or "10.0.0.2:7443" / "[2001:db8::2]:7443"
    std::string tls_name; // the name the certificate must carry when target is an address; else empty
};

// A host name's addresses (numeric, without brackets), as getaddrinfo gives them; empty when it
// does not resolve. Replaceable in tests.
using KbResolver = std::function<std::vector<std::string>(const std::string& host)>;
std::vector<std::string> resolve_host(const std::string& host);

// The endpoints of the URLs, in order. Only a TLS URL with a host name (not an address, not
// localhost) is resolved; one address (or none: gRPC reports the failure when it dials) keeps the
// name as the target, so gRPC resolves it again when it reconnects. Repeated addresses count once.
std::vector<KbEndpoint> kb_endpoints(const std::vector<KbUrl>& urls, const KbResolver& resolve = resolve_host);

}  // namespace mnemo::detail
