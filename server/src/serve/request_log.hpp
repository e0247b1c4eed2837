// The request log line (docs/kb-protocol.md, "Logs") and what a call notes for it. Everything a
// client can influence (its error message echoes request fields; the peer string comes from the
// connection) is escaped with mnemo::printable(), so a line stays one line of plain text: a
// newline cannot forge a second entry, an escape sequence cannot reach the operator's terminal.
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "serve/serve_counters.hpp"

namespace mnemo::kb {

// What one call did, for its log line and the counters.
struct CallNote {
    std::string detail;  // "k=5 hits=5": counts only, never query text
    uint64_t records = 0;
    uint64_t bytes = 0;
    // For the server's log only: what the client is not told (a bank error with the server's
    // paths behind a DATA_LOSS or INTERNAL the client sees in general words).
    std::string server_error;
};

// UTC time, peer, client name, method, status, milliseconds, the call's counts, the error's
// message and, when there is one, the server-only error.
std::string format_request_log(std::chrono::system_clock::time_point when, const std::string& peer, const std::string& client,
                               KbMethod method, const grpc::Status& status, double ms, const CallNote& note);

// `text` as one quoted field value: printable() and then '"' escaped, so the field cannot end early.
std::string quoted_log_value(const std::string& text);

}  // namespace mnemo::kb
