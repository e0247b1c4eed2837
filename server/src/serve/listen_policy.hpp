// Who may reach a server without TLS or without tokens: nobody but the machine itself. Plaintext
// (`--insecure`) carries bearer tokens in the clear, so it is allowed on a loopback address only,
// and `--no-auth` only on top of that (quick local tests). docs/kb-protocol.md, "Transport".
#pragma once

#include <string>

namespace mnemo::kb {

// True when a listen address ("HOST:PORT", "[V6]:PORT") names this machine only: 127.0.0.0/8,
// ::1 (also as ::ffff:127.x.y.z) or "localhost". Anything else, "0.0.0.0" and "[::]" included, is
// false, as is an address without a port.
bool is_loopback_listen_address(const std::string& listen);

// "" when `listen` is HOST:PORT or [V6]:PORT with a port in 0..65535 (0: the system picks one,
// see --port-file); else a usage error naming --listen and the value. gRPC itself would take
// "127.0.0.1:99999" and listen on port 99999 mod 65536.
std::string listen_address_problem(const std::string& listen);

struct TransportChoice {
    std::string listen;
    bool tls = false;       // --tls-cert and --tls-key given
    bool insecure = false;  // --insecure
    bool tokens = false;    // --tokens given
    bool no_auth = false;   // --no-auth
};

// "" when the combination may serve, else what is wrong and how to fix it (a usage error).
std::string transport_problem(const TransportChoice& c);

}  // namespace mnemo::kb
