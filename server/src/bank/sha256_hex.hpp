// SHA-256 of bytes as lowercase hex, for the bank's manifest (every blob is named there with its
// hash). The engine's own SHA-256 is private to libmnemo, so mnemo-kb uses OpenSSL's libcrypto,
// which the server links anyway (access tokens).
#pragma once

#include <string>
#include <string_view>

namespace mnemo::kb {

std::string sha256_hex(std::string_view bytes);

}  // namespace mnemo::kb
