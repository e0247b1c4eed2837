// `mnemo-kb push URL CORPUS`: teach a running server a corpus through its admin call AddDocuments
// (mnemo/kb/kb_admin.hpp; docs/kb-protocol.md): the client side of what `add` does on the bank's
// own machine. Ctrl-C cancels the call: the server keeps serving its previous version, and pushing
// the same corpus again resumes from the batches it had finished.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "app/args.hpp"
#include "app/corpus.hpp"
#include "app/json_writer.hpp"
#include "bank_cli.hpp"
#include "commands.hpp"
#include "mnemo/kb/kb_admin.hpp"
#include "mnemo/kb/kb_source.hpp"

namespace mnemo::kb {
namespace {

std::atomic<bool> g_cancel{false};
extern "C" void on_interrupt(int) { g_cancel.store(true); }

}  // namespace

int cmd_push(int argc, char** argv) {
    KbAdminConnection c;
    std::string token_file;
    app::CorpusOptions corpus_options;
    bool json = false;
    app::ArgParser p("push", "mnemo-kb push URL CORPUS --token-file F [options]",
                     "Send CORPUS (a folder of .txt/.md files or a .jsonl file, read as `add` reads it) to the knowledge "
                     "server at URL (grpcs://HOST:PORT, or grpc://HOST:PORT on loopback), which memorizes it with its model "
                     "(`serve --model`) and serves it as a new bank version. Needs an admin token. A document whose id the "
                     "bank holds replaces it. Ctrl-C cancels (nothing is published; pushing again resumes).");
    p.string_opt("--token-file", "F", "file holding an admin token (mnemo-kb token new --scope admin)", &token_file)
        .string_opt("--ca-file", "F", "PEM roots that sign the server's certificate (grpcs://; default: the system's)", &c.ca_file)
        .int_opt("--timeout-ms", "N", "longest silence tolerated from the server (default 30000)", &c.timeout_ms, 1, 86400000)
        .flag("--follow-external-links", "read linked files that lie outside the CORPUS folder (refused by default)",
              &corpus_options.follow_external_links)
        .flag("--json", "print the result as one JSON object on stdout", &json);
    int first = 2;
    std::vector<std::string> pos = leading_positionals(argc, argv, first);
    if (!p.parse(argc, argv, first)) return 0;
    if (pos.size() != 2) throw app::UsageError("expected URL and CORPUS right after 'push'");
    c.url = pos[0];
    if (!token_file.empty()) c.token = read_kb_token(token_file);

    std::vector<KbAddDocument> docs;
    for (app::CorpusDocument& d : app::read_corpus(pos[1], corpus_options))
        docs.push_back({std::move(d.doc_id), std::move(d.title), std::move(d.source), std::move(d.text), !d.title_given});
    std::fprintf(stderr, "mnemo-kb: pushing %zu documents to %s\n", docs.size(), c.url.c_str());

    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    std::string stage;
    int tenth = -1;
    const KbAddResult r = kb_add_documents(
        c, docs,
        [&](const KbAddProgress& pr) {
            const uint64_t done = pr.stage == "sending" ? pr.documents_sent : pr.references_done;
            const uint64_t total = pr.stage == "sending" ? pr.documents_total : pr.references_total;
            const int t = total ? static_cast<int>(10 * done / total) : 0;
            if (pr.stage == stage && t == tenth) return;
            stage = pr.stage;
            tenth = t;
            std::fprintf(stderr, "mnemo-kb: %s %llu/%llu%s\n", pr.stage.c_str(), static_cast<unsigned long long>(done),
                         static_cast<unsigned long long>(total),
                         pr.references_per_second > 0 ? (" (" + std::to_string(static_cast<int>(pr.references_per_second)) + " references/s)").c_str() : "");
        },
        &g_cancel);
    if (json) {
        app::JsonWriter j;
        j.begin_object()
            .key("url").value(c.url)
            .key("version").value(r.bank_version)
            .key("documents").value(r.documents)
            .key("references").value(r.references)
            .key("replaced_documents").value(r.replaced_documents)
            .key("resumed_batches").value(r.resumed_batches)
            .key("notes").array(r.notes)
            .end_object();
        std::printf("%s\n", j.str().c_str());
    } else {
        std::printf("pushed to %s: version %llu, %llu documents (%llu replaced), %llu references (%llu batches resumed)\n", c.url.c_str(),
                    static_cast<unsigned long long>(r.bank_version), static_cast<unsigned long long>(r.documents),
                    static_cast<unsigned long long>(r.replaced_documents), static_cast<unsigned long long>(r.references),
                    static_cast<unsigned long long>(r.resumed_batches));
        for (const std::string& n : r.notes) std::printf("note: %s\n", n.c_str());
    }
    return 0;
}

}  // namespace mnemo::kb
