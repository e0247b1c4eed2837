#include "serve/tls_key_match.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <climits>
#include <memory>

namespace mnemo::kb {
namespace {

struct BioFree {
    void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
    void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<BIO, BioFree> memory_bio(const std::string& pem) {
    if (pem.size() > static_cast<size_t>(INT_MAX)) return nullptr;
    return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// An encrypted key must not make OpenSSL prompt on the terminal (its default): a server started by
// systemd would wait forever. No password: the key does not load, and the error says so.
int no_password(char*, int, int, void*) { return 0; }

}  // namespace

std::string tls_key_mismatch(const std::string& cert_pem, const std::string& key_pem, const std::string& cert_name,
                             const std::string& key_name) {
    auto cert_bio = memory_bio(cert_pem);
    std::unique_ptr<X509, X509Free> cert(cert_bio ? PEM_read_bio_X509(cert_bio.get(), nullptr, no_password, nullptr) : nullptr);
    if (!cert) {
        ERR_clear_error();  // OpenSSL's queue is per thread: leave nothing for gRPC's next call to trip on
        return cert_name + " holds no PEM certificate that parses";
    }
    auto key_bio = memory_bio(key_pem);
    std::unique_ptr<EVP_PKEY, KeyFree> key(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_password, nullptr) : nullptr);
    if (!key) {
        ERR_clear_error();
        return key_name + " holds no PEM private key that parses (an encrypted key is not supported)";
    }
    const bool match = X509_check_private_key(cert.get(), key.get()) == 1;
    ERR_clear_error();
    if (!match)
        return "the private key in " + key_name + " does not match the certificate in " + cert_name +
               " (the first certificate of the chain must be the server's own, made for this key)";
    return "";
}

}  // namespace mnemo::kb
