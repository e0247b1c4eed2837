// `mnemo memorize`: turn a text corpus into a folder of explicit memories (Memory3 §3.3) that
// `mnemo run --memories` reads. The corpus is split into references at blank lines; a paragraph
// longer than the model's reference length is cut into consecutive references of that length.
// Each corpus file is a document, its file name the document's id (kept with its references), so
// that `--update` can memorize changed files again in place of what the folder held for them.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "app/measure.hpp"
#include "app/paragraphs.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "memory/memory_flags.hpp"
#include "memory/memory_update.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::cli {

int cmd_memorize(int argc, char** argv) {
    ModelFlags model;
    std::string corpus, out;
    bool force = false, update = false;
    app::ArgParser p("memorize", "mnemo memorize [-m DIR] --corpus FILE -o FOLDER [options]",
                     "Encode every reference of a UTF-8 text corpus (paragraphs separated by blank lines) into explicit "
                     "memories with the model, and write them to FOLDER for `mnemo run --memories FOLDER`.");
    add_model_flags(p, model);
    p.string_opt("--corpus", "FILE", "the text corpus: a UTF-8 file, or a folder of .txt files (required)", &corpus)
        .string_opt("-o,--out", "FOLDER", "the memory folder to write (required)", &out)
        .flag("--force", "replace FOLDER if it exists (the old one stays until the new one is complete)", &force)
        .flag("--update",
              "add to the memory folder FOLDER: a corpus file it already holds (same file name) replaces what it held "
              "for that file, other files are added (FOLDER is rewritten whole, atomically)",
              &update);
    if (!p.parse(argc, argv, 2)) return 0;
    if (corpus.empty()) throw app::UsageError("missing --corpus FILE");
    if (out.empty()) throw app::UsageError("missing -o/--out FOLDER");
    if (update && force) throw app::UsageError("--update adds to FOLDER and --force replaces it; give one of them");

    // A file, or a folder whose .txt files are read in name order (each ends its paragraphs).
    std::vector<std::string> files;
    if (std::filesystem::is_directory(corpus)) {
        for (const auto& e : std::filesystem::directory_iterator(corpus))
            if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path().string());
        std::sort(files.begin(), files.end());
        if (files.empty()) throw Error("corpus folder '" + corpus + "' holds no .txt file");
    } else {
        files.push_back(corpus);
    }
    // One document per file: its id is the file name.
    std::vector<std::pair<std::string, std::string>> documents;  // (doc_id, text)
    for (const std::string& file : files) {
        std::string part;
        try {
            part = read_file_capped(file, kMaxDocumentFileBytes, "corpus file");
        } catch (const Error& e) {
            throw with_context("--corpus", e);
        }
        // The references' texts are stored as JSON strings, which must be UTF-8: say where the
        // corpus is not, rather than store U+FFFD in its place.
        if (const size_t bad = invalid_utf8_offset(part); bad != std::string::npos)
            throw Error("--corpus: " + file + ": byte " + std::to_string(bad) + " is not valid UTF-8 (expected a UTF-8 text file)");
        documents.emplace_back(std::filesystem::path(file).filename().string(), std::move(part));
    }

    const std::string dir = resolve_model_dir(model);
    const auto tok = open_tokenizer(dir);
    const auto session = open_session(session_options(model, dir));
    if (!session->reads_memories())
        throw Error("model '" + dir + "' (" + session->summary().model_type + ") does not read explicit memories");
    const MemorySpec& spec = session->memory_spec();
    const MemoryFolderModel folder_model = memory_folder_model(*session);
    // --update: the folder is read and checked before anything is memorized.
    MemoryFolderContents old;
    if (update) {
        if (!std::filesystem::exists(out))
            throw Error("memory folder '" + out + "' does not exist; --update adds to an existing folder (leave --update out to make one)");
        old = read_memory_folder(out);
        if (old.codec)
            throw Error("memory folder '" + out + "' holds compressed (vq) memories; --update adds f32 memories, so memorize into an f32 "
                        "folder and compress that (mnemo-kb compress)");
        check_memory_model(old.model, folder_model, nullptr, "memory folder '" + out + "'");
    }

    std::vector<std::vector<int32_t>> refs;
    std::vector<MemoryReference> meta;
    for (const auto& [doc_id, text] : documents)
        for (const std::string& para : app::split_paragraphs(text)) {
            const std::vector<int32_t> ids = tok->encode(para, /*parse_special=*/false);
            for (size_t i = 0; i < ids.size(); i += static_cast<size_t>(spec.reference_length)) {
                std::vector<int32_t> piece(ids.begin() + static_cast<long>(i),
                                           ids.begin() + static_cast<long>(std::min(ids.size(), i + static_cast<size_t>(spec.reference_length))));
                meta.push_back({piece, tok->decode(piece, /*skip_special=*/false), doc_id});
                refs.push_back(std::move(piece));
            }
        }
    if (refs.empty()) throw Error("corpus '" + corpus + "' holds no text");

    install_interrupt_handler();
    session->set_cancel_flag(&interrupt_flag());
    const double t0 = app::now_seconds();
    std::vector<WrittenMemory> memories = session->write_memories(refs);
    const double seconds = app::now_seconds() - t0;
    size_t tokens = 0;
    for (const auto& r : refs) tokens += r.size();
    if (update) {
        const size_t fresh = memories.size();
        MemoryFolderUpdate u = update_memory_folder(std::move(old), std::move(memories), std::move(meta));
        write_memory_folder(out, folder_model, u.memories, u.references, /*replace=*/true);
        std::fprintf(stderr,
                     "memorize --update: %zu of %zu documents replace what %s held (%zu references dropped), %zu references kept, "
                     "%zu added: %zu in all\n",
                     u.replaced_documents, documents.size(), out.c_str(), u.dropped, u.kept, fresh, u.memories.size());
        if (u.without_id)
            std::fprintf(stderr, "memorize --update: %zu references of %s have no document id (written before ids were kept); they stay\n",
                         u.without_id, out.c_str());
    } else {
        write_memory_folder(out, folder_model, memories, meta, force);
    }
    std::fprintf(stderr, "memorize: %zu references (%zu tokens) -> %s in %.2f s (%.1f references/s) on %s\n", refs.size(), tokens,
                 out.c_str(), seconds, seconds > 0 ? static_cast<double>(refs.size()) / seconds : 0.0,
                 session->summary().device_name.c_str());
    return 0;
}

}  // namespace mnemo::cli
