#include "app/memorize.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "app/measure.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/memory_record.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::app {
namespace {

namespace fs = std::filesystem;

std::string absolute_path(const fs::path& p) {
    std::error_code ec;
    const fs::path a = fs::absolute(p, ec);
    return (ec ? p : a).lexically_normal().string();
}

std::vector<CorpusDocument> read_one(const std::string& path, const CorpusOptions& options) {
    std::error_code ec;
    const fs::path p(path);
    if (fs::is_directory(p, ec)) {
        std::vector<CorpusDocument> docs = read_corpus(path, options);
        for (CorpusDocument& d : docs) d.source = absolute_path(p / d.doc_id);
        return docs;
    }
    if (p.extension() == ".jsonl") return read_corpus(path, options);
    // A text file: the document is the whole file (the `mnemo memorize --corpus FILE` of old).
    CorpusDocument d;
    d.text = read_file_capped(path, kMaxDocumentFileBytes, "corpus file");
    d.doc_id = p.filename().string();
    DocumentTitle title = title_of(d.text, p.stem().string());
    d.title = std::move(title.text);
    d.title_given = title.given;
    d.source = absolute_path(p);
    return {std::move(d)};
}

// Where a document came from, for errors: its source, and its id when that differs.
std::string named(const CorpusDocument& d) {
    if (d.source.empty() || d.source == d.doc_id) return "document '" + printable(d.doc_id, 200) + "'";
    return "document '" + printable(d.doc_id, 200) + "' (" + printable(d.source, 400) + ")";
}

}  // namespace

std::vector<CorpusDocument> read_documents(const std::vector<std::string>& paths, const CorpusOptions& options) {
    if (paths.empty()) throw Error("no documents were given (expected .txt/.md files, .jsonl files or folders)");
    std::vector<CorpusDocument> out;
    std::map<std::string, size_t> by_id;
    for (const std::string& path : paths) {
        for (CorpusDocument& d : read_one(path, options)) {
            // The references' texts are stored as JSON strings, which must be UTF-8: say where the
            // text is not, rather than store U+FFFD in its place.
            if (const size_t bad = invalid_utf8_offset(d.text); bad != std::string::npos)
                throw Error((d.source.empty() ? named(d) : printable(d.source, 400)) + ": byte " + std::to_string(bad) +
                            " is not valid UTF-8 (expected a UTF-8 text file)");
            if (auto [it, fresh] = by_id.emplace(d.doc_id, out.size()); !fresh)
                throw Error(named(d) + " has the id of " + named(out[it->second]) + "; each document needs an id of its own");
            out.push_back(std::move(d));
        }
    }
    return out;
}

MemorizeResult memorize_documents(Session& session, const Tokenizer& tok, const std::vector<CorpusDocument>& documents,
                                  const std::string& folder, const MemorizeOptions& options) {
    const std::string where = "memory folder '" + folder + "'";
    if (!session.reads_memories())
        throw Error("model '" + session.summary().model_type + "' does not read explicit memories, so it cannot memorize documents");
    const MemorySpec& spec = session.memory_spec();
    const MemoryFolderModel model = memory_folder_model(session);

    // Everything that can be refused is, before the first reference is encoded.
    std::error_code ec;
    const bool exists = fs::exists(folder, ec);
    MemoryFolderContents old;
    if (options.write == FolderWrite::Create && exists)
        throw Error(where + " already exists (choose another folder, or --force to replace it)");
    if (options.write == FolderWrite::Update) {
        if (!exists)
            throw Error(where + " does not exist; --update adds to an existing folder (leave --update out to make one)");
        old = read_memory_folder(folder);
        if (old.codec)
            throw Error(where + " holds compressed (vq) memories, which cannot be added to: memorize into the f32 folder it was "
                        "compressed from, then compress that again (mnemo-kb compress)");
        check_memory_model(old.model, model, nullptr, where);
    }

    const std::vector<CorpusReference> cut = cut_references(documents, tok, spec.reference_length);
    if (cut.empty()) throw Error(documents.size() == 1 ? named(documents[0]) + " holds no text" : "the documents hold no text");
    std::vector<MemoryReference> meta;
    meta.reserve(cut.size());
    MemorizeResult result;
    std::set<size_t> memorized;
    for (const CorpusReference& r : cut) {
        const CorpusDocument& d = documents[r.document];
        meta.push_back({r.tokens, r.text, d.doc_id, d.title, d.source, r.title_tokens});
        result.tokens += r.tokens.size();
        memorized.insert(r.document);
    }
    result.documents = memorized.size();
    result.references = cut.size();

    const size_t batch = options.batch > 0 ? options.batch : std::max<size_t>(16, 4 * static_cast<size_t>(std::max(1, spec.encode_sequences)));
    if (options.cancel) session.set_cancel_flag(options.cancel);
    std::vector<WrittenMemory> memories;
    memories.reserve(cut.size());
    MemorizeProgress progress{result.documents, 0, cut.size(), 0};
    const double t0 = now_seconds();
    if (options.progress) options.progress(progress);
    for (size_t at = 0; at < cut.size(); at += batch) {
        if (options.cancel && options.cancel->load()) throw Cancelled();
        const size_t end = std::min(cut.size(), at + batch);
        std::vector<std::vector<int32_t>> slice;
        slice.reserve(end - at);
        for (size_t i = at; i < end; ++i) slice.push_back(cut[i].tokens);
        std::vector<WrittenMemory> got = session.write_memories(slice);
        for (WrittenMemory& m : got) memories.push_back(std::move(m));
        progress.references_done = end;
        progress.seconds = now_seconds() - t0;
        if (options.progress) options.progress(progress);
    }
    result.seconds = now_seconds() - t0;
    // The last moment to change one's mind: after this the folder is swapped.
    if (options.cancel && options.cancel->load()) throw Cancelled();
    // Record ids are positions in the folder: write_memory_folder numbers them again.
    if (options.write == FolderWrite::Update) {
        MemoryFolderUpdate u = update_memory_folder(std::move(old), std::move(memories), std::move(meta));
        write_memory_folder(folder, model, u.memories, u.references, /*replace=*/true);
        result.replaced_documents = u.replaced_documents;
        result.dropped = u.dropped;
        result.kept = u.kept;
        result.without_id = u.without_id;
        result.total = u.memories.size();
    } else {
        write_memory_folder(folder, model, memories, meta, /*replace=*/options.write == FolderWrite::Replace);
        result.total = memories.size();
    }
    return result;
}

MemoryFolderUpdate update_memory_folder(MemoryFolderContents old, std::vector<WrittenMemory> fresh,
                                        std::vector<MemoryReference> fresh_references) {
    if (old.memories.size() != old.references.size() || fresh.size() != fresh_references.size())
        throw Error("memory folder update: one reference per memory is needed");
    std::set<std::string> fresh_docs, replaced;
    for (const MemoryReference& r : fresh_references) fresh_docs.insert(r.doc_id);
    MemoryFolderUpdate u;
    for (size_t i = 0; i < old.memories.size(); ++i) {
        const std::string& doc = old.references[i].doc_id;
        if (doc.empty()) ++u.without_id;
        if (!doc.empty() && fresh_docs.count(doc)) {
            replaced.insert(doc);
            ++u.dropped;
            continue;
        }
        u.memories.push_back(std::move(old.memories[i]));
        u.references.push_back(std::move(old.references[i]));
        ++u.kept;
    }
    u.replaced_documents = replaced.size();
    for (size_t i = 0; i < fresh.size(); ++i) {
        u.memories.push_back(std::move(fresh[i]));
        u.references.push_back(std::move(fresh_references[i]));
    }
    return u;
}

}  // namespace mnemo::app
