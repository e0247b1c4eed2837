// `mnemo-kb serve BANK --listen ADDR:PORT ...`: serves a bank folder over gRPC until SIGINT or
// SIGTERM (docs/kb-protocol.md). The production wiring of KbServer: the bank comes from the folder
// (Bank::open), access tokens from the token file, the certificate and key from PEM files.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <thread>

#include "app/args.hpp"
#include "bank/bank.hpp"
#include "commands.hpp"
#include "store_cli.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/atomic_file.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/session/session.hpp"
#include "serve/bank_editor.hpp"
#include "serve/kb_server.hpp"
#include "serve/listen_policy.hpp"
#include "serve/shard_cli.hpp"
#include "serve/tls_key_match.hpp"

namespace mnemo::kb {
namespace {

// Regular files only, size-capped (mnemo/io/file_read.hpp): a FIFO or a device given by mistake
// is an error at once, not a server that hangs at start.
std::string read_pem(const std::string& path, const char* what) {
    std::string text;
    try {
        text = read_file_capped(path, kMaxSmallFileBytes, what);
    } catch (const std::exception& e) {
        throw Error(std::string(what) + ": " + printable(e.what()));
    }
    if (text.find("-----BEGIN") == std::string::npos) throw Error(std::string(what) + " '" + printable(path) + "' is not PEM");
    return text;
}

void log_to_stderr(const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }

// The model of AddDocuments, opened on a thread whose signal mask blocks SIGINT/SIGTERM: the
// threads the backend starts inherit that mask, so the signals keep reaching only the main thread
// now (their default action: a long load stays interruptible) and only the sigwait thread once
// serving. A backend thread with them unblocked would take SIGTERM's default action, killing the
// server without its graceful shutdown.
std::shared_ptr<Session> open_session_masked(const SessionOptions& so, const sigset_t& signals) {
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &signals, &old);
    std::shared_ptr<Session> session;
    std::exception_ptr error;
    std::thread opener([&] {
        try {
            session = Session::open(so);
        } catch (...) {
            error = std::current_exception();
        }
    });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    opener.join();
    if (error) std::rethrow_exception(error);
    return session;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
    std::string bank_dir, tls_cert, tls_key, tokens_file, port_file;
    ServeOptions o;
    bool log_quiet = false;
    int32_t max_k = static_cast<int32_t>(o.limits.max_k), max_ids = static_cast<int32_t>(o.limits.max_ids_per_request);
    int32_t max_streams = static_cast<int32_t>(o.limits.max_streams_per_client);
    int32_t max_receive = static_cast<int32_t>(o.limits.max_receive_bytes), max_call = static_cast<int32_t>(o.limits.max_call_seconds);
    int32_t watch = 0, grace = 5;
    int32_t nprobe = 0;  // IVF lists a query probes; 0: the bank's default (server/README.md, "Retrieval index")
    // AddDocuments (the model memorizes; build's flags) and its limits.
    SessionOptions so;
    int32_t threads = 0, batch = 64;
    int32_t max_add_docs = static_cast<int32_t>(o.limits.max_add_documents), max_add_seconds = static_cast<int32_t>(o.limits.max_add_seconds);
    int32_t max_add_bytes = static_cast<int32_t>(o.limits.max_add_bytes);
    app::ArgParser p(
        "serve",
        "mnemo-kb serve BANK --listen ADDR:PORT (--tls-cert F --tls-key F | --insecure) (--tokens F | --no-auth) [options]",
        "Serve a bank's memories over gRPC (engine/proto/mnemo_kb.proto; docs/kb-protocol.md) until SIGINT or SIGTERM. "
        "TLS is required except on a loopback address with --insecure; every call needs a bearer token from --tokens "
        "(mnemo-kb token new), except with --no-auth, which only --insecure on loopback allows. One log line per request "
        "goes to stderr (no tokens, no query text).");
    p.string_opt("--listen", "ADDR:PORT", "where to listen (port 0: the system picks; see --port-file)", &o.listen)
        .string_opt("--tls-cert", "FILE", "PEM certificate chain of the server", &tls_cert)
        .string_opt("--tls-key", "FILE", "PEM private key of the certificate", &tls_key)
        .flag("--insecure", "plaintext, allowed on a loopback address only (127.0.0.0/8, [::1], localhost)", &o.insecure)
        .string_opt("--tokens", "FILE", "the access tokens (lines 'NAME read|admin sha256:HEX')", &tokens_file)
        .flag("--no-auth", "accept calls without a token (only with --insecure on loopback: local tests)", &o.no_auth)
        .int_opt("--max-k", "N", "largest k a Retrieve may ask (default 64)", &max_k, 1, 1 << 16)
        .int_opt("--max-ids", "N", "most ids per FetchMemories (default 256)", &max_ids, 1, 1 << 20)
        .int_opt("--max-streams-per-client", "N", "calls in flight per token name (default 16)", &max_streams, 1, 1 << 20)
        .int_opt("--max-receive-bytes", "N", "largest request message (default 4194304)", &max_receive, 1024, 1 << 30)
        .int_opt("--max-call-seconds", "N", "a call's longest time on the server (default 60)", &max_call, 1, 86400)
        .int_opt("--watch-seconds", "N", "poll the bank's published version every N s and load a new one (default 0: "
                                         "only on Reload)",
                 &watch, 0, 86400)
        .int_opt("--shutdown-grace", "S", "seconds calls in flight get to finish on SIGINT/SIGTERM (default 5)", &grace, 0, 3600)
        .string_opt("--port-file", "FILE", "write the bound port there once serving (atomically), remove it on exit", &port_file)
        .flag("--log-quiet", "no per-request log lines (reload failures are still reported)", &log_quiet)
        .int_opt("--nprobe", "N", "inverted lists a query probes when the bank stores an IVF index (more: better recall, slower; "
                                  "default: a sixteenth of the lists, at least 32); a flat index is exact and ignores it",
                 &nprobe, 1, 1 << 20)
        .string_opt("-m,--model", "DIR", "the bank's model: lets admins add documents (AddDocuments); without it they are refused",
                    &so.model_dir)
        .string_opt("--backend", "NAME", "backend that memorizes added documents (default: cpu)", &so.backend)
        .int_opt("--device", "I", "device index within the backend (default: 0)", &so.device, 0, 1 << 16)
        .int_opt("--threads", "N", "threads of the backend that memorizes (default: its own choice)", &threads, 1, 4096)
        .int_opt("--batch", "N", "references per memorize batch and checkpoint of AddDocuments (default: 64)", &batch, 1, 1 << 20)
        .int_opt("--max-add-documents", "N", "most documents per AddDocuments call, and doc_ids per DeleteDocuments (default 10000)",
                 &max_add_docs, 1, 1 << 24)
        .int_opt("--max-add-bytes", "N", "most text bytes per AddDocuments call (default 268435456)", &max_add_bytes, 1, INT32_MAX)
        .int_opt("--max-add-seconds", "N", "an AddDocuments call's longest time on the server (default 3600)", &max_add_seconds, 1, 7 * 86400);
    StoreCli store;
    store.add_to(p);
    ShardCli shards;
    shards.add_to(p);
    int first = 2;
    if (argc > 2 && argv[2][0] != '-') {
        bank_dir = argv[2];
        first = 3;
    }
    if (!p.parse(argc, argv, first)) return 0;
    if (!store.store.empty()) {
        if (!bank_dir.empty()) throw app::UsageError("give BANK or --store, not both");
        bank_dir = store.store;
    }
    if (bank_dir.empty()) throw app::UsageError("missing BANK (the bank folder, right after 'serve')");
    if (tls_cert.empty() != tls_key.empty()) throw app::UsageError("--tls-cert and --tls-key go together");
    shards.check();
    TransportChoice choice{o.listen, !tls_cert.empty(), o.insecure, !tokens_file.empty(), o.no_auth};
    if (const std::string problem = transport_problem(choice); !problem.empty()) throw app::UsageError(problem);

    if (!tls_cert.empty()) {
        o.tls_cert_pem = read_pem(tls_cert, "TLS certificate");
        o.tls_key_pem = read_pem(tls_key, "TLS key");
        // Checked here with the file names; gRPC's own error would name neither file.
        const std::string mismatch = tls_key_mismatch(o.tls_cert_pem, o.tls_key_pem, "--tls-cert '" + printable(tls_cert) + "'",
                                                      "--tls-key '" + printable(tls_key) + "'");
        if (!mismatch.empty()) throw Error(mismatch);
    }
    if (!tokens_file.empty()) {
        o.tokens = TokenTable::load(tokens_file);
        if (o.tokens->size() == 0) throw Error("tokens file '" + printable(tokens_file) + "' holds no token (mnemo-kb token new adds one)");
    }
    o.limits.max_k = static_cast<uint32_t>(max_k);
    o.limits.max_ids_per_request = static_cast<uint32_t>(max_ids);
    o.limits.max_streams_per_client = static_cast<uint32_t>(max_streams);
    o.limits.max_receive_bytes = static_cast<uint32_t>(max_receive);
    o.limits.max_call_seconds = static_cast<uint32_t>(max_call);
    o.limits.max_add_documents = static_cast<uint32_t>(max_add_docs);
    o.limits.max_add_bytes = static_cast<uint64_t>(max_add_bytes);
    o.limits.max_add_seconds = static_cast<uint32_t>(max_add_seconds);
    o.watch_seconds = static_cast<uint32_t>(watch);
    o.server_version = MNEMO_VERSION;
    if (!log_quiet) o.log = log_to_stderr;

    std::shared_ptr<BankStorage> storage = open_bank_storage(bank_dir, store.options, false);
    BankProvider provider;
    provider.describe = "bank '" + bank_dir + "'";
    BankOpenOptions open_options;
    shards.apply(open_options);
    open_options.nprobe = static_cast<uint32_t>(nprobe);
    provider.open = [storage, open_options] { return Bank::open(storage, open_options); };
    o.shard_peers = shards.connect();
    provider.current_version = [storage] { return Bank::current_version(*storage); };

    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);

    // The writer of AddDocuments/DeleteDocuments: the same folder; the model only with --model
    // (loaded now, so a wrong folder fails the start, not the first call).
    BankEditorOptions eo;
    eo.storage = storage;
    eo.batch = static_cast<size_t>(batch);
    if (!so.model_dir.empty()) {
        so.n_threads = threads;
        try {
            eo.session = open_session_masked(so, stop_signals);
        } catch (const std::exception& e) {
            if (std::string(e.what()).find(so.model_dir) != std::string::npos) throw;
            throw with_context("--model '" + so.model_dir + "' on backend '" + so.backend + "'", e);
        }
        eo.model_dir = so.model_dir;
    }
    o.editor = std::make_shared<BankEditor>(std::move(eo));

    // SIGINT/SIGTERM are taken by one thread (sigwait) rather than a handler, so the shutdown
    // runs as ordinary code. The mask is set once the bank is open, before any gRPC thread
    // exists, so all inherit it; until then the signals keep their default action, so a start
    // that takes long (a large bank) or gets stuck is still ended by Ctrl-C or systemd's SIGTERM.
    o.before_threads = [&stop_signals] { pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr); };

    if (!port_file.empty()) std::filesystem::remove(port_file);
    std::unique_ptr<KbServer> server = KbServer::start(std::move(provider), o);
    const std::shared_ptr<const Bank> bank = server->bank();
    o.editor->check_model(*bank);  // a model that is not the bank's would only fail every AddDocuments
    std::fprintf(stderr, "mnemo-kb serve: %s version %llu (%llu memories) on %s, port %d, %s, %s, %s\n", printable(bank_dir).c_str(),
                 static_cast<unsigned long long>(bank->version()), static_cast<unsigned long long>(bank->count()), printable(o.listen).c_str(),
                 server->port(), o.insecure ? "plaintext (loopback)" : "TLS", o.tokens ? "bearer tokens" : "NO authentication",
                 o.editor->can_add() ? ("AddDocuments with model '" + printable(so.model_dir) + "'").c_str() : "no AddDocuments (no --model)");
    std::fprintf(stderr, "mnemo-kb serve: retrieval index: %s\n", bank->index_description().c_str());
    if (bank->shards() > 1)
        std::fprintf(stderr, "mnemo-kb serve: shard %u/%u, asking %zu peer node(s) per Retrieve\n", bank->shard(), bank->shards(),
                     o.shard_peers->size());
    if (!port_file.empty()) write_file_atomically(port_file, std::to_string(server->port()) + "\n", 0644);

    std::thread stopper([&] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        std::fprintf(stderr, "mnemo-kb serve: %s: stopping (calls in flight get %d s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM", grace);
        server->shutdown(std::chrono::seconds(grace));
    });
    server->wait();
    stopper.join();
    if (!port_file.empty()) std::filesystem::remove(port_file);
    std::fprintf(stderr, "mnemo-kb serve: stopped\n");
    return 0;
}

}  // namespace mnemo::kb
