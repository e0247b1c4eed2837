// Reading a knowledge server's access token, and the retrieval mode names: what the CLI and a GUI
// need whether or not this build has the gRPC client.
#include <fstream>
#include <sstream>

#include "mnemo/error.hpp"
#include "mnemo/memory/remote_memory.hpp"

namespace mnemo {

std::string read_knowledge_server_token(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("token file '" + path + "': cannot open");
    std::ostringstream s;
    s << f.rdbuf();
    std::string token = s.str();
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

RemoteRetrieval remote_retrieval_from_name(const std::string& name) {
    if (name == "vector") return RemoteRetrieval::Vector;
    if (name == "bm25") return RemoteRetrieval::BM25;
    if (name == "hybrid") return RemoteRetrieval::Hybrid;
    throw Error("unknown retrieval mode '" + name + "' (expected vector, bm25 or hybrid)");
}

}  // namespace mnemo
