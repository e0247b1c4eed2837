// `mnemo memorize`: turn a text corpus into a folder of explicit memories (Memory3 §3.3) that
// `mnemo run --memories` reads. The corpus is split into references at blank lines; a paragraph
// longer than the model's reference length is cut into consecutive references of that length.
// Each corpus file is a document, its file name (its path inside a corpus folder; a JSONL line's
// id) the document's id, kept with its references, so that `--update` can memorize changed files
// again in place of what the folder held for them. The work is app::memorize_documents
// (app/common), which mnemo-chat's Add documents shares.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "app/memorize.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "memory/memory_flags.hpp"
#include "mnemo/error.hpp"

namespace mnemo::cli {

int cmd_memorize(int argc, char** argv) {
    ModelFlags model;
    std::string corpus, out;
    bool force = false, update = false;
    app::ArgParser p("memorize", "mnemo memorize [-m DIR] --corpus PATH -o FOLDER [options]",
                     "Encode every reference of a UTF-8 text corpus (paragraphs separated by blank lines) into explicit "
                     "memories with the model, and write them to FOLDER for `mnemo run --memories FOLDER`.");
    add_model_flags(p, model);
    p.string_opt("--corpus", "PATH",
                 "the text corpus: a UTF-8 text file (one document), a folder of .txt/.md files (one document each), or a "
                 ".jsonl file of {\"id\", \"text\", \"title\"?, \"source\"?} lines (required)",
                 &corpus)
        .string_opt("-o,--out", "FOLDER", "the memory folder to write (required)", &out)
        .flag("--force", "replace FOLDER if it exists (the old one stays until the new one is complete)", &force)
        .flag("--update",
              "add to the memory folder FOLDER: a corpus file it already holds (same file name) replaces what it held "
              "for that file, other files are added (FOLDER is rewritten whole, atomically)",
              &update);
    if (!p.parse(argc, argv, 2)) return 0;
    if (corpus.empty()) throw app::UsageError("missing --corpus PATH");
    if (out.empty()) throw app::UsageError("missing -o/--out FOLDER");
    if (update && force) throw app::UsageError("--update adds to FOLDER and --force replaces it; give one of them");

    // Read and checked before the model loads: a bad corpus is reported at once.
    std::vector<app::CorpusDocument> documents;
    try {
        documents = app::read_documents({corpus});
    } catch (const Error& e) {
        throw with_context("--corpus", e);
    }

    const std::string dir = resolve_model_dir(model);
    const auto tok = open_tokenizer(dir);
    const auto session = open_session(session_options(model, dir));
    if (!session->reads_memories())
        throw Error("model '" + dir + "' (" + session->summary().model_type + ") does not read explicit memories");

    install_interrupt_handler();
    app::MemorizeOptions options;
    options.write = update ? app::FolderWrite::Update : force ? app::FolderWrite::Replace : app::FolderWrite::Create;
    options.cancel = &interrupt_flag();
    // A progress line on a terminal only (a log or a pipe gets the summary alone).
    const bool tty = isatty(fileno(stderr)) != 0;
    if (tty)
        options.progress = [](const app::MemorizeProgress& p) {
            const double eta = p.eta_seconds();
            std::fprintf(stderr, "\rmemorize: %zu/%zu references, %.1f references/s%s%s", p.references_done, p.references_total,
                         p.references_per_second(), eta >= 0 ? ", " : "",
                         eta >= 0 ? (std::to_string(static_cast<long>(eta + 0.5)) + " s left   ").c_str() : "");
        };
    const app::MemorizeResult r = app::memorize_documents(*session, *tok, documents, out, options);
    if (tty) std::fputc('\n', stderr);
    if (update) {
        std::fprintf(stderr,
                     "memorize --update: %zu of %zu documents replace what %s held (%zu references dropped), %zu references kept, "
                     "%zu added: %zu in all\n",
                     r.replaced_documents, documents.size(), out.c_str(), r.dropped, r.kept, r.references, r.total);
        if (r.without_id)
            std::fprintf(stderr, "memorize --update: %zu references of %s have no document id (written before ids were kept); they stay\n",
                         r.without_id, out.c_str());
    }
    std::fprintf(stderr, "memorize: %zu references (%zu tokens) -> %s in %.2f s (%.1f references/s) on %s\n", r.references, r.tokens,
                 out.c_str(), r.seconds, r.seconds > 0 ? static_cast<double>(r.references) / r.seconds : 0.0,
                 session->summary().device_name.c_str());
    return 0;
}

}  // namespace mnemo::cli
