// Reading a knowledge server's access token, and the retrieval mode names: what the CLI and a GUI
// need whether or not this build has the gRPC client.
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/kb/kb_source.hpp"

namespace mnemo {

namespace {

// A token travels as an HTTP/2 header value, and gRPC refuses metadata above 8 KiB by default:
// a token file far larger than that is not a token (and is not buffered whole).
constexpr uint64_t kMaxTokenFileBytes = 64 << 10;

}  // namespace

std::string read_kb_token(const std::string& path) {
    std::string token = read_file_capped(path, kMaxTokenFileBytes, "access token file");
    const char* space = " \t\r\n";
    const size_t first = token.find_first_not_of(space);
    if (first == std::string::npos) throw Error("token file '" + path + "' is empty");
    token = token.substr(first, token.find_last_not_of(space) - first + 1);
    // One line: a token is sent as an HTTP/2 header value, where a newline cannot go.
    for (char c : token)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            throw Error("token file '" + path + "': the token must be one line of printable characters");
    return token;
}

KbRetrieval kb_retrieval_from_name(const std::string& name) {
    if (name == "vector") return KbRetrieval::Vector;
    if (name == "bm25") return KbRetrieval::BM25;
    if (name == "hybrid") return KbRetrieval::Hybrid;
    throw Error("unknown retrieval mode '" + name + "' (expected vector, bm25 or hybrid)");
}

}  // namespace mnemo
