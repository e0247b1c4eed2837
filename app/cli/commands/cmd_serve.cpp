// `mnemo serve`: the OpenAI-compatible HTTP API (docs/serve.md) over one session with
// --parallel slots, continuous batching, explicit memories (--kb / --memories) and their
// references in every answer. The work is in app/serve; this file reads the flags, opens the
// model, checks that an address off this machine is protected, and runs until SIGINT/SIGTERM.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "commands.hpp"
#include "common.hpp"
#include "memory/memory_flags.hpp"
#include "mnemo/error.hpp"

#ifdef MNEMO_HAVE_SERVE
#include "serve/api_server.hpp"
#include "serve/batch_scheduler.hpp"
#endif

namespace mnemo::cli {

#ifndef MNEMO_HAVE_SERVE

int cmd_serve(int, char**) {
    throw Error("this build of mnemo has no HTTP server: cpp-httplib was not found when it was built "
                "(install libcpp-httplib-dev and rebuild; scripts/install-deps.sh)");
}

#else

namespace {

bool is_loopback(const std::string& host) {
    return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string model_id(const ModelFlags& model, const std::string& alias) {
    if (!alias.empty()) return alias;
    if (model.model.empty()) return "mnemo-default";
    std::string m = model.model;
    while (m.size() > 1 && m.back() == '/') m.pop_back();
    const size_t slash = m.rfind('/');
    return slash == std::string::npos ? m : m.substr(slash + 1);
}

}  // namespace

int cmd_serve(int argc, char** argv) {
    ModelFlags model;
    MemoryFlags memories;
    serve::ServerOptions server;
    serve::SchedulerOptions scheduling;
    int32_t parallel = 4, port = 8080, queue = 64, max_body_mib = 8, timeout_s = 30, max_tokens = 1 << 20;
    std::string alias, key_file, new_key, tls_cert, tls_key;
    bool plain_http = false, grounded = false;
    app::ArgParser p("serve", "mnemo serve [-m DIR|FILE.gguf] [--host H --port P] [--parallel N] [options]",
                     "Serve the model over the OpenAI HTTP API: /v1/chat/completions, /v1/completions (streaming or not),\n"
                     "/v1/models, /v1/embeddings, /health, /metrics. Requests share the device by continuous batching\n"
                     "(--parallel slots). Loopback only unless --api-key-file (and TLS) protect it. docs/serve.md.");
    add_model_flags(p, model);
    add_memory_flags(p, memories);
    p.string_opt("--host", "ADDR", "address to listen on (default: 127.0.0.1; any other needs --api-key-file and TLS)",
                 &server.host)
        .int_opt("--port", "P", "TCP port (default: 8080; 0: any free one, printed)", &port, 0, 65535)
        .int_opt("-np,--parallel", "N", "slots: requests decoded together, each with its own context (default: 4)", &parallel, 1, 256)
        .int_opt("--queue", "N", "requests waiting for a slot at most; more get 429 (default: 64)", &queue, 0, 1 << 16)
        .int_opt("--prefill-chunk", "N", "prompt tokens per prefill piece between decode steps (default: 256)",
                 &scheduling.prefill_chunk, 1, 1 << 16)
        .int_opt("--max-tokens", "N", "the largest max_tokens a request may ask for (default: no limit but the context)",
                 &max_tokens, 1, 1 << 30)
        .int_opt("--max-body", "MIB", "request bodies larger than this are refused with 413 (default: 8)", &max_body_mib, 1, 1024)
        .int_opt("--timeout", "S", "drop a client that sends or reads slower than this (default: 30)", &timeout_s, 1, 3600)
        .string_opt("--alias", "NAME", "the model's id in /v1/models and answers (default: the model folder's name)", &alias)
        .string_opt("--api-key-file", "F", "require 'Authorization: Bearer KEY' with a key whose hash is in F (lines 'NAME sha256:HEX')",
                    &key_file)
        .string_opt("--new-api-key", "NAME", "make a key for NAME, append its hash to --api-key-file, print the key and exit",
                    &new_key)
        .string_opt("--tls-cert", "PEM", "serve HTTPS with this certificate (chain)", &tls_cert)
        .string_opt("--tls-key", "PEM", "and this private key", &tls_key)
        .flag("--allow-plain-http", "off loopback, allow HTTP without TLS (behind a TLS-terminating proxy)", &plain_http)
        .flag("--grounded", "answers quote the references their prompt read, as `mnemo ask --grounded`, unless a request "
                            "says \"grounded\": false (a request may also ask for it with \"grounded\": true; needs "
                            "--memories or --kb)",
              &grounded);
    if (!p.parse(argc, argv, 2)) return 0;
    check_kb_flags(memories);  // a bad --kb list is said before the model loads
    check_grounded_flag(memories, grounded);
    server.grounded = grounded;

    if (!new_key.empty()) {
        if (key_file.empty()) throw app::UsageError("--new-api-key needs --api-key-file F (where its hash is stored)");
        const serve::NewApiKey k = serve::new_api_key(new_key);
        serve::append_api_key(key_file, k, new_key);
        std::fprintf(stderr, "mnemo serve: key '%s' added to %s; it is shown once, here:\n", new_key.c_str(), key_file.c_str());
        std::printf("%s\n", k.key.c_str());
        return 0;
    }
    if (!key_file.empty()) server.keys = serve::ApiKeys::load(key_file);
    if (!is_loopback(server.host)) {
        if (!server.keys)
            throw app::UsageError("--host " + server.host + " is reachable from other machines: give --api-key-file F " +
                                  "(make a key with --new-api-key NAME --api-key-file F)");
        if (tls_cert.empty() && !plain_http)
            throw app::UsageError("--host " + server.host + " is reachable from other machines: give --tls-cert and --tls-key " +
                                  "(or --allow-plain-http behind a TLS-terminating proxy)");
    }
    server.port = port;
    server.tls_cert = tls_cert;
    server.tls_key = tls_key;
    server.max_body_bytes = static_cast<size_t>(max_body_mib) << 20;
    server.read_timeout_s = server.write_timeout_s = timeout_s;
    server.limits.max_tokens = max_tokens;
    scheduling.max_queue = static_cast<size_t>(queue);

    // SIGINT/SIGTERM are taken by one thread (sigwait), so every other thread runs with them
    // blocked: the server stops between requests, not inside one.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer is an error return, not a dead server

    const std::string dir = resolve_model_dir(model);
    const auto tok = open_tokenizer(dir);
    std::string note;
    const ChatTemplate tmpl = detect_chat_template(dir, &note);
    if (!note.empty()) std::fprintf(stderr, "mnemo serve: %s\n", note.c_str());
    SessionOptions so = session_options(model, dir);
    so.n_seq = parallel;
    so.n_ubatch = std::max(so.n_ubatch, parallel);
    const auto session = open_session(so);
    const AttachedMemories attached = attach_memories(*session, memories);
    const std::shared_ptr<RetrievalRecorder> recorder = record_retrieval(*session, attached);

    serve::Metrics metrics;
    serve::BatchScheduler scheduler(*session, *tok, recorder, scheduling, metrics);
    serve::ServedModel served;
    served.id = model_id(model, alias);
    served.tokenizer = tok.get();
    served.chat_template = tmpl;
    served.n_ctx = session->n_ctx();
    served.reads_memories = session->reads_memories();
    served.references_recorded = recorder != nullptr;
    served.embeddings = session->reads_memories();
    if (served.embeddings) served.embedding_max_tokens = session->memory_spec().reference_length;
    served.created = static_cast<int64_t>(std::time(nullptr));
    serve::ApiServer api(server, served, scheduler, metrics);
    const int bound = api.bind();

    std::thread stopper([&] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        std::fprintf(stderr, "mnemo serve: %s, stopping\n", sig == SIGINT ? "interrupted" : "terminated");
        api.stop();
    });
    const char* scheme = tls_cert.empty() ? "http" : "https";
    std::fprintf(stderr, "mnemo serve: %s (%s on %s), %d slots of %d tokens, %s\n", served.id.c_str(),
                 session->summary().model_type.c_str(), session->summary().device_name.c_str(), parallel, session->n_ctx(),
                 attached ? attached.source->describe().c_str() : "no explicit memories");
    std::fprintf(stderr, "mnemo serve: listening on %s://%s:%d/v1%s\n", scheme, server.host.c_str(), bound,
                 server.keys ? " (API key required)" : "");
    std::fflush(stderr);
    api.run();
    // run() returned: stop() was called by the signal thread (or listening failed).
    pthread_kill(stopper.native_handle(), SIGTERM);
    stopper.join();
    std::fprintf(stderr, "mnemo serve: %llu requests' tokens: %llu prompt (%llu from cache), %llu generated\n",
                 static_cast<unsigned long long>(metrics.requests[static_cast<size_t>(serve::Endpoint::ChatCompletions)][0].load() +
                                                 metrics.requests[static_cast<size_t>(serve::Endpoint::Completions)][0].load()),
                 static_cast<unsigned long long>(metrics.prompt_tokens.load()),
                 static_cast<unsigned long long>(metrics.prompt_tokens_cached.load()),
                 static_cast<unsigned long long>(metrics.generated_tokens.load()));
    if (attached.kb) std::fprintf(stderr, "%s\n", kb_summary(attached.kb->status()).c_str());
    return 0;
}

#endif

}  // namespace mnemo::cli
