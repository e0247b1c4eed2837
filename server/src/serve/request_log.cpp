#include "serve/request_log.hpp"

#include <cstdio>
#include <ctime>

#include "mnemo/io/printable.hpp"
#include "serve/request_checks.hpp"

namespace mnemo::kb {

std::string quoted_log_value(const std::string& text) {
    // printable() has turned every '\' into "\\", so a '\"' below is unambiguous.
    std::string out = "\"";
    for (char c : printable(text, 1024)) {
        if (c == '"') out += '\\';
        out += c;
    }
    return out + "\"";
}

std::string format_request_log(std::chrono::system_clock::time_point when, const std::string& peer, const std::string& client,
                               KbMethod method, const grpc::Status& status, double ms, const CallNote& note) {
    using Clock = std::chrono::system_clock;
    const std::time_t t = Clock::to_time_t(when);
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[80];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                  tm.tm_min, tm.tm_sec, static_cast<int>(millis));
    char head[96];
    std::snprintf(head, sizeof head, " status=%s ms=%.3f", status_code_name(status.error_code()), ms);
    // The peer is gRPC's "ipv4:10.0.0.7:53122"; the client name is a token-file name
    // ([A-Za-z0-9._-]): both are escaped anyway, a log line must not depend on either staying so.
    std::string line = std::string(stamp) + " peer=" + (peer.empty() ? "-" : printable(peer, 256)) +
                       " client=" + (client.empty() ? "-" : printable(client, 256)) + " method=" + method_name(method) + head;
    if (!note.detail.empty()) line += " " + note.detail;
    line += " records=" + std::to_string(note.records) + " bytes=" + std::to_string(note.bytes);
    if (!status.ok()) line += " error=" + quoted_log_value(status.error_message());
    if (!note.server_error.empty()) line += " server_error=" + quoted_log_value(note.server_error);
    return line;
}

}  // namespace mnemo::kb
