// mnemo-kb-load: a bounded, closed-loop load generator for `mnemo-kb serve` (issue 13's load
// benchmark). N clients, each on its own connection, repeat what a device does per chunk for a
// fixed time: Retrieve k memories for a random unit query vector, then FetchMemories of the hits
// (two round trips), or RetrieveMemories (one), and record the latency of the pair. It reports
// requests/s, p50/p90/p99/max latency and errors by status code, as a table or JSON.
//
// Bounded by design: it stops after --seconds or --max-requests per client, whichever comes
// first, and refuses any address that is not on this machine (the load must stay on loopback).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "app/args.hpp"
#include "app/json_writer.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo_kb.grpc.pb.h"

namespace kbv1 = mnemo::kb::v1;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    std::string target = "127.0.0.1:50051";
    std::string token_file, ca_file;
    std::string mode = "two";  // two: Retrieve + FetchMemories; one: RetrieveMemories
    int32_t clients = 64, seconds = 60, k = 5, deadline_ms = 2000;
    uint64_t max_requests = 1000000;
    bool json = false;
};

bool loopback(const std::string& target) {
    const std::string host = target.substr(0, target.rfind(':'));
    return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

std::string read_token(const std::string& file) {
    std::ifstream f(file);
    if (!f) throw std::runtime_error("cannot read token file '" + file + "'");
    std::string t;
    std::getline(f, t);
    while (!t.empty() && (t.back() == '\r' || t.back() == ' ')) t.pop_back();
    return t;
}

std::shared_ptr<grpc::Channel> channel(const Options& o) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // one connection per client, not one shared
    args.SetMaxReceiveMessageSize(64 << 20);
    std::shared_ptr<grpc::ChannelCredentials> creds;
    if (o.ca_file.empty()) {
        creds = grpc::InsecureChannelCredentials();
    } else {
        std::ifstream f(o.ca_file);
        std::stringstream s;
        s << f.rdbuf();
        grpc::SslCredentialsOptions ssl;
        ssl.pem_root_certs = s.str();
        creds = grpc::SslCredentials(ssl);
    }
    return grpc::CreateCustomChannel(o.target, creds, args);
}

struct ClientResult {
    std::vector<double> latency_ms;
    std::map<std::string, uint64_t> errors;
    uint64_t records = 0, record_bytes = 0;
};

void prepare(grpc::ClientContext& ctx, const Options& o, const std::string& token) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(o.deadline_ms));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
}

std::string code_name(const grpc::Status& s) { return std::to_string(static_cast<int>(s.error_code())); }

void run_client(int index, const Options& o, const std::string& token, int dim, Clock::time_point stop, ClientResult& r) {
    auto stub = kbv1::KnowledgeBase::NewStub(channel(o));
    std::mt19937 rng(static_cast<uint32_t>(1234 + index));
    std::normal_distribution<float> gauss;
    for (uint64_t n = 0; n < o.max_requests && Clock::now() < stop; ++n) {
        kbv1::RetrieveRequest req;
        double norm = 0;
        std::vector<float> v(static_cast<size_t>(dim));
        for (float& x : v) {
            x = gauss(rng);
            norm += static_cast<double>(x) * x;
        }
        for (float x : v) req.add_vector(static_cast<float>(x / std::sqrt(norm)));
        req.set_k(static_cast<uint32_t>(o.k));
        req.set_omit_texts(true);
        const auto t0 = Clock::now();
        grpc::Status status;
        if (o.mode == "one") {
            grpc::ClientContext ctx;
            prepare(ctx, o, token);
            kbv1::RetrieveMemoriesReply reply;
            status = stub->RetrieveMemories(&ctx, req, &reply);
            for (const auto& rec : reply.records()) r.record_bytes += rec.record().size();
            r.records += static_cast<uint64_t>(reply.records_size());
        } else {
            kbv1::RetrieveReply hits;
            {
                grpc::ClientContext ctx;
                prepare(ctx, o, token);
                status = stub->Retrieve(&ctx, req, &hits);
            }
            if (status.ok() && hits.hits_size() > 0) {
                kbv1::FetchRequest fetch;
                for (const auto& h : hits.hits()) fetch.add_ids(h.id());
                grpc::ClientContext ctx;
                prepare(ctx, o, token);
                auto reader = stub->FetchMemories(&ctx, fetch);
                kbv1::MemoryRecord rec;
                while (reader->Read(&rec)) {
                    r.record_bytes += rec.record().size();
                    ++r.records;
                }
                status = reader->Finish();
            }
        }
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (status.ok()) r.latency_ms.push_back(ms);
        else ++r.errors[code_name(status) + " " + status.error_message().substr(0, 60)];
    }
}

double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size()))) - (p > 0 ? 1 : 0));
    return sorted[i];
}

}  // namespace

int main(int argc, char** argv) try {
    Options o;
    mnemo::app::ArgParser p("mnemo-kb-load", "mnemo-kb-load --target HOST:PORT [options]",
                            "Closed-loop load on a loopback mnemo-kb server: per request a Retrieve of k memories and the "
                            "FetchMemories of the hits (or one RetrieveMemories). Bounded in time and count.");
    p.string_opt("--target", "HOST:PORT", "the server (loopback only; default 127.0.0.1:50051)", &o.target)
        .string_opt("--token-file", "FILE", "a read token (first line)", &o.token_file)
        .string_opt("--ca", "FILE", "TLS: the CA certificate (without: plaintext)", &o.ca_file)
        .string_opt("--mode", "two|one", "two: Retrieve + FetchMemories (default); one: RetrieveMemories", &o.mode)
        .int_opt("-c,--clients", "N", "concurrent clients, one connection each (default 64)", &o.clients, 1, 1024)
        .int_opt("-s,--seconds", "S", "duration (default 60)", &o.seconds, 1, 3600)
        .u64_opt("--max-requests", "N", "per client, at most (default 1000000)", &o.max_requests)
        .int_opt("-k", "K", "memories per request (default 5)", &o.k, 1, 1024)
        .int_opt("--deadline-ms", "MS", "per call (default 2000)", &o.deadline_ms, 1, 600000)
        .flag("--json", "one JSON object on stdout", &o.json);
    if (!p.parse(argc, argv, 1)) return 0;
    if (o.mode != "one" && o.mode != "two") throw mnemo::app::UsageError("--mode must be one or two");
    if (!loopback(o.target)) throw mnemo::app::UsageError("--target '" + o.target + "' is not a loopback address: load stays on this machine");
    const std::string token = o.token_file.empty() ? "" : read_token(o.token_file);

    // The query dimension comes from the bank itself.
    auto stub = kbv1::KnowledgeBase::NewStub(channel(o));
    grpc::ClientContext ctx;
    prepare(ctx, o, token);
    kbv1::InfoReply info;
    const grpc::Status st = stub->Info(&ctx, kbv1::InfoRequest(), &info);
    if (!st.ok()) throw std::runtime_error("Info on " + o.target + " failed: " + st.error_message());
    const mnemo::json::Value model = mnemo::json::parse(info.bank().model_json(), "Info.bank.model_json");
    const int dim = static_cast<int>(model.find("retrieval_dim")->as_int());

    std::vector<ClientResult> results(static_cast<size_t>(o.clients));
    std::vector<std::thread> threads;
    const auto t0 = Clock::now();
    const auto stop = t0 + std::chrono::seconds(o.seconds);
    for (int i = 0; i < o.clients; ++i)
        threads.emplace_back(run_client, i, std::cref(o), std::cref(token), dim, stop, std::ref(results[static_cast<size_t>(i)]));
    for (auto& t : threads) t.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();

    std::vector<double> all;
    std::map<std::string, uint64_t> errors;
    uint64_t records = 0, bytes = 0, n_errors = 0;
    for (const auto& r : results) {
        all.insert(all.end(), r.latency_ms.begin(), r.latency_ms.end());
        for (const auto& [k, v] : r.errors) errors[k] += v, n_errors += v;
        records += r.records;
        bytes += r.record_bytes;
    }
    std::sort(all.begin(), all.end());
    const double rps = static_cast<double>(all.size()) / elapsed;
    if (o.json) {
        mnemo::app::JsonWriter w;
        w.begin_object().key("target").value(o.target).key("mode").value(o.mode).key("clients").value(o.clients)
            .key("seconds").value(elapsed).key("k").value(o.k).key("requests").value(static_cast<uint64_t>(all.size()))
            .key("requests_per_s").value(rps).key("p50_ms").value(percentile(all, 0.5)).key("p90_ms").value(percentile(all, 0.9))
            .key("p99_ms").value(percentile(all, 0.99)).key("max_ms").value(all.empty() ? 0.0 : all.back())
            .key("records").value(records).key("record_bytes").value(bytes).key("errors").value(n_errors);
        w.key("errors_by_status").begin_object();
        for (const auto& [k, v] : errors) w.key(k).value(v);
        w.end_object().end_object();
        std::printf("%s\n", w.str().c_str());
    } else {
        std::printf("| target | mode | clients | s | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | errors |\n"
                    "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
                    "| %s | %s | %d | %.1f | %zu | %.0f | %.2f | %.2f | %.2f | %.2f | %llu |\n",
                    o.target.c_str(), o.mode == "one" ? "RetrieveMemories" : "Retrieve+Fetch", o.clients, elapsed, all.size(), rps,
                    percentile(all, 0.5), percentile(all, 0.9), percentile(all, 0.99), all.empty() ? 0.0 : all.back(),
                    static_cast<unsigned long long>(n_errors));
        for (const auto& [k, v] : errors) std::printf("  error %s: %llu\n", k.c_str(), static_cast<unsigned long long>(v));
        std::printf("records fetched: %llu (%.1f KiB each)\n", static_cast<unsigned long long>(records),
                    records ? static_cast<double>(bytes) / static_cast<double>(records) / 1024.0 : 0.0);
    }
    return n_errors == 0 ? 0 : 1;
} catch (const mnemo::app::UsageError& e) {
    std::fprintf(stderr, "mnemo-kb-load: %s\n", e.what());
    return 2;
} catch (const std::exception& e) {
    std::fprintf(stderr, "mnemo-kb-load: %s\n", e.what());
    return 1;
}
