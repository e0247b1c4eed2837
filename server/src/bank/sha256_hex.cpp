#include "sha256_hex.hpp"

#include <openssl/evp.h>

#include "mnemo/error.hpp"

namespace mnemo::kb {

std::string sha256_hex(std::string_view bytes) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), digest, &n, EVP_sha256(), nullptr) != 1 || n != 32)
        throw Error("SHA-256: OpenSSL's EVP_Digest failed");
    static const char* hex = "0123456789abcdef";
    std::string out(64, '0');
    for (unsigned i = 0; i < 32; ++i) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    return out;
}

}  // namespace mnemo::kb
