// A TLS certificate and private key that do not belong together make gRPC fail at bind time with
// a message that names neither (or, in some gRPC versions, only at the first handshake). The
// server checks the pair itself before it listens (OpenSSL's X509_check_private_key on the first
// certificate of the chain, the server's own), so the operator learns which files disagree.
#pragma once

#include <string>

namespace mnemo::kb {

// "" when the PEM key is the private key of the first certificate in the PEM chain; else what is
// wrong ("the certificate does not parse", "the private key does not match the certificate"),
// with `cert_name` and `key_name` (file names, or "the certificate"/"the key") in the message.
std::string tls_key_mismatch(const std::string& cert_pem, const std::string& key_pem, const std::string& cert_name,
                             const std::string& key_name);

}  // namespace mnemo::kb
