// mnemo-serve-load: a bounded loopback load generator for OpenAI-compatible servers (`mnemo
// serve`, llama-server): C clients, each sending R streaming /v1/completions requests one after
// another (ignore_eos, max_tokens N, greedy), every K-th request with a long prompt. Prints total
// generated tokens/s, per-client tokens/s, time to first token p50/p99.
// Tokens are counted from the stream's content events (one per token on both servers) or its
// usage chunk when the server sends one. A Markdown table row on stdout; --json-out FILE appends
// the same figures as a JSON line. docs/benchmarks.md ("mnemo serve under load").
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
    int port = 8080;
    int clients = 1;
    int requests = 4;        // per client
    int max_tokens = 64;
    int long_every = 0;      // every K-th request (per client) has a long prompt; 0: none
    int long_words = 400;    // its words
    std::string json_out;  // also append the row as one JSON line to this file
    std::string label = "server";
};

struct RequestResult {
    bool ok = false;
    int tokens = 0;
    double ttft_ms = 0;
    double seconds = 0;
    std::string error;
};

std::string prompt_of(int client, int request, const Options& o) {
    std::string p = "Client " + std::to_string(client) + " request " + std::to_string(request) + ": once upon a time";
    if (o.long_every > 0 && (request + 1) % o.long_every == 0)
        for (int i = 0; i < o.long_words; ++i) p += " and then the story went on";
    return p;
}

// One streaming completion; reads the SSE stream to its end.
RequestResult run_request(const Options& o, const std::string& prompt) {
    RequestResult r;
    const Clock::time_point start = Clock::now();
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(o.port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        r.error = "cannot connect";
        if (fd >= 0) ::close(fd);
        return r;
    }
    std::string escaped;
    for (char c : prompt) escaped += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    const std::string body = "{\"prompt\":\"" + escaped + "\",\"max_tokens\":" + std::to_string(o.max_tokens) +
                             ",\"temperature\":0,\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
    const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                            "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
        r.error = "send failed";
        ::close(fd);
        return r;
    }
    std::string got;
    size_t scanned = 0;
    int events = 0, usage_tokens = -1;
    bool done = false;
    char buf[16384];
    while (!done) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
        // Events are "data: {...}" lines; chunked framing lines between them are skipped.
        size_t p;
        while ((p = got.find("data: ", scanned)) != std::string::npos) {
            const size_t end = got.find('\n', p);
            if (end == std::string::npos) break;
            const std::string ev = got.substr(p + 6, end - p - 6);
            scanned = end;
            if (ev.rfind("[DONE]", 0) == 0) {
                done = true;
                break;
            }
            // The first event that carries a token (its text may be empty: a piece that completes
            // no character yet) marks the first token.
            if (ev.find("\"text\":\"") != std::string::npos && ev.find("\"finish_reason\":null") != std::string::npos) {
                if (events++ == 0) r.ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
            }
            const size_t u = ev.find("\"completion_tokens\":");
            if (u != std::string::npos) usage_tokens = std::atoi(ev.c_str() + u + 20);
        }
    }
    ::close(fd);
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.tokens = usage_tokens >= 0 ? usage_tokens : events;
    r.ok = done && r.tokens > 0;
    if (!r.ok) r.error = got.substr(0, 300);
    return r;
}

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
    return v[i];
}

int usage(const char* msg) {
    if (msg) std::fprintf(stderr, "mnemo-serve-load: %s\n", msg);
    std::fprintf(stderr,
                 "usage: mnemo-serve-load --port P [--clients C] [--requests R] [--max-tokens N]\n"
                 "       [--long-every K --long-words W] [--label NAME] [--json-out FILE]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        const char* v = nullptr;
        if ((v = next()) == nullptr) return usage(("missing the value of " + a).c_str());
        if (a == "--port") o.port = std::atoi(v);
        else if (a == "--clients") o.clients = std::atoi(v);
        else if (a == "--requests") o.requests = std::atoi(v);
        else if (a == "--max-tokens") o.max_tokens = std::atoi(v);
        else if (a == "--long-every") o.long_every = std::atoi(v);
        else if (a == "--long-words") o.long_words = std::atoi(v);
        else if (a == "--label") o.label = v;
        else if (a == "--json-out") o.json_out = v;
        else return usage(("unknown option " + a).c_str());
    }
    if (o.port <= 0 || o.clients <= 0 || o.requests <= 0 || o.max_tokens <= 0 || o.clients > 1024 || o.requests > 100000)
        return usage("--port, --clients (1..1024), --requests and --max-tokens must be positive");

    std::vector<std::vector<RequestResult>> results(static_cast<size_t>(o.clients));
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < o.clients; ++c)
        threads.emplace_back([&, c] {
            for (int r = 0; r < o.requests; ++r) results[static_cast<size_t>(c)].push_back(run_request(o, prompt_of(c, r, o)));
        });
    for (auto& t : threads) t.join();
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();

    long tokens = 0;
    int failed = 0;
    std::vector<double> ttft, per_client;
    std::string first_error;
    for (const auto& client : results) {
        long client_tokens = 0;
        double client_seconds = 0;
        for (const RequestResult& r : client) {
            if (!r.ok) {
                if (failed++ == 0) first_error = r.error;
                continue;
            }
            tokens += r.tokens;
            client_tokens += r.tokens;
            client_seconds += r.seconds;
            ttft.push_back(r.ttft_ms);
        }
        if (client_seconds > 0) per_client.push_back(static_cast<double>(client_tokens) / client_seconds);
    }
    double mean_client = 0;
    for (double x : per_client) mean_client += x / static_cast<double>(per_client.size());
    const double total = static_cast<double>(tokens) / wall;
    std::printf("| %-24s | %7d | %8d | %9.1f | %10.1f | %9.1f | %9.1f | %6d |\n", o.label.c_str(), o.clients,
                o.clients * o.requests, total, mean_client, percentile(ttft, 0.5), percentile(ttft, 0.99), failed);
    if (!o.json_out.empty()) {
        FILE* f = std::fopen(o.json_out.c_str(), "a");
        if (f == nullptr) {
            std::fprintf(stderr, "mnemo-serve-load: cannot append to %s: %s\n", o.json_out.c_str(), std::strerror(errno));
            return 1;
        }
        std::fprintf(f, "{\"label\":\"%s\",\"clients\":%d,\"requests\":%d,\"max_tokens\":%d,\"long_every\":%d,\"failed\":%d,"
                    "\"tokens\":%ld,\"seconds\":%.3f,\"total_tokens_per_second\":%.2f,\"client_tokens_per_second\":%.2f,"
                    "\"ttft_ms_p50\":%.1f,\"ttft_ms_p99\":%.1f}\n",
                    o.label.c_str(), o.clients, o.clients * o.requests, o.max_tokens, o.long_every, failed, tokens, wall, total,
                    mean_client, percentile(ttft, 0.5), percentile(ttft, 0.99));
        std::fclose(f);
    }
    if (failed) std::fprintf(stderr, "mnemo-serve-load: %d requests failed; the first: %s\n", failed, first_error.c_str());
    return failed ? 1 : 0;
}
