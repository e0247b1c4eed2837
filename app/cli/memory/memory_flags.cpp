#include "memory/memory_flags.hpp"

#include <cstdio>

#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/retrieval_settings.hpp"

namespace mnemo::cli {

void add_memory_flags(app::ArgParser& p, MemoryFlags& f) {
    p.string_opt("--memories", "FOLDER", "explicit memories made by `mnemo memorize` (models that read memories, e.g. memory3)",
                 &f.folder)
        .list_opt("--kb", "URL", "explicit memories from a knowledge server (`mnemo-kb serve`): grpcs://HOST:PORT, or "
                                 "grpc://HOST:PORT on a loopback address; instead of --memories. Repeat it for several servers "
                                 "over one bank (all grpcs:// or all grpc://, one token and CA): chunks are spread over them "
                                 "and a chunk whose server fails goes to another",
                  &f.kb_urls)
        .string_opt("--kb-token-file", "FILE", "file holding the knowledge server's access token (sent as a bearer token)",
                    &f.kb_token_file)
        .string_opt("--kb-ca", "FILE", "PEM certificates that sign the server's TLS certificate (default: the system's roots)",
                    &f.kb_ca)
        .int_opt("--kb-timeout-ms", "N", "deadline of each knowledge-server call; a chunk whose call fails goes to the next "
                                         "server within twice this, and gets no memories when none answers (default: 2000)",
                 &f.kb_timeout_ms, 1, 600000)
        .string_opt("--retrieval", "MODE", "how chunks find memories: vector (the model's hidden state, cosine) or bm25 "
                                           "(lexical, over tokens); with --kb also hybrid (both, fused by rank) (default: what the "
                                           "model's generation_config.json recommends, else bm25; vector needs a model with trained retrieval vectors)",
                    &f.retrieval)
        .double_opt("--min-relative-score", "R", "leave out references scoring below R times the chunk's best one (0..1; 0 keeps "
                                                "all k): drops near misses such as a look-alike name (default: the model's "
                                                "recommendation, else 0)",
                    &f.min_relative_score, 0.0, 1.0)
        .int_opt("--min-references", "N", "the relative cut never leaves fewer than the N best references (0: no floor): in "
                                         "a handful of references every one is a near match (default: the model's "
                                         "recommendation, else 0)",
                 &f.min_references, 0, static_cast<int>(kMaxMinReferences));
}

std::string kb_location(const MemoryFlags& f) {
    std::string out;
    for (const std::string& u : f.kb_urls) out += (out.empty() ? "" : ", ") + u;
    return out;
}

void check_kb_flags(const MemoryFlags& f) {
    if (f.kb_urls.empty()) return;
    // A mnemo::Error (exit 1), as a bad URL always was; it names the URLs at fault.
    check_kb_urls(f.kb_urls);
}

AttachedMemories attach_memories(Session& session, const MemoryFlags& f) {
    const bool kb = !f.kb_urls.empty();
    check_kb_flags(f);
    if (kb && !f.folder.empty()) throw app::UsageError("--memories and --kb both give memories: choose one");
    if (!kb && (!f.kb_token_file.empty() || !f.kb_ca.empty()))
        throw app::UsageError("--kb-token-file and --kb-ca need --kb URL");
    // The mode is checked even without a source, so a typo is reported whatever the other flags.
    if (!f.retrieval.empty() && !kb && kb_retrieval_from_name(f.retrieval) == KbRetrieval::Hybrid)
        throw app::UsageError("--retrieval hybrid needs --kb (a memory folder ranks by vector or bm25)");
    AttachedMemories out;
    if (f.folder.empty() && !kb) return out;
    // The model's advice is read only when memories are: a run without them never depends on it.
    const RetrievalAdvice advice = recommended_retrieval(session.summary().model_dir);
    const std::string mode = !f.retrieval.empty() ? f.retrieval : !advice.mode.empty() ? advice.mode : "bm25";
    const KbRetrieval kb_mode = kb_retrieval_from_name(mode);
    if (!kb && kb_mode == KbRetrieval::Hybrid)
        throw app::UsageError("the model recommends hybrid retrieval, which needs --kb: give --retrieval vector or bm25");
    out.retrieval = mode;
    out.min_relative_score = f.min_relative_score >= 0 ? f.min_relative_score : advice.min_relative_score;
    out.min_references = f.min_references >= 0 ? static_cast<uint32_t>(f.min_references) : advice.min_references;
    const char* flag = kb ? "--kb" : "--memories";
    if (!session.reads_memories())
        throw Error(std::string(flag) + ": model '" + session.summary().model_dir + "' (" + session.summary().model_type +
                    ") does not read explicit memories");
    if (kb) {
        KbSourceOptions o;
        if (f.kb_urls.size() == 1) {
            o.url = f.kb_urls.front();
        } else {
            o.urls = f.kb_urls;
        }
        if (!f.kb_token_file.empty()) o.token = read_kb_token(f.kb_token_file);
        o.ca_file = f.kb_ca;
        o.retrieval = kb_mode;
        o.min_relative_score = out.min_relative_score;
        o.min_references = out.min_references;
        o.connect_timeout_ms = o.call_timeout_ms = f.kb_timeout_ms;
        out.kb = connect_kb(o, memory_folder_model(session));
        out.source = out.kb;
    } else {
        out.source = std::make_shared<FolderMemorySource>(f.folder, memory_folder_model(session), retrieval_mode_from_name(mode),
                                                          out.min_relative_score, out.min_references);
    }
    session.set_memory_source(out.source);
    return out;
}

void add_grounded_flag(app::ArgParser& p, bool* grounded) {
    p.flag("--grounded", "answers may only quote the references read (in a chat, those of their own turn): a token that "
                         "would not continue a quote of one is masked, and an answer ends only where a quoted word ends "
                         "(needs --memories or --kb)",
           grounded);
}

void check_grounded_flag(const MemoryFlags& f, bool grounded) {
    if (grounded && f.folder.empty() && f.kb_urls.empty())
        throw app::UsageError("--grounded quotes the references read: give --memories or --kb");
}

std::shared_ptr<RetrievalRecorder> record_retrieval(Session& session, const AttachedMemories& attached) {
    if (!attached) return nullptr;
    auto recorder = std::make_shared<RetrievalRecorder>(attached.source);
    session.set_memory_source(recorder);
    return recorder;
}

std::string kb_summary(const KbSourceStatus& s) {
    const double chunks = s.retrievals ? static_cast<double>(s.retrievals) : 1.0;
    const uint64_t retrieved = s.cache_hits + s.cache_misses;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "kb %s: bank %llu, %llu chunks, %llu records fetched (%.1f KiB, %.1f KiB/chunk), cache hits %.0f%%, "
                  "prefetched %llu/%llu, %llu failed, %llu skipped while backing off",
                  printable(s.url).c_str(), static_cast<unsigned long long>(s.bank_version), static_cast<unsigned long long>(s.retrievals),
                  static_cast<unsigned long long>(s.records_fetched), static_cast<double>(s.reply_bytes) / 1024.0,
                  static_cast<double>(s.reply_bytes) / 1024.0 / chunks,
                  retrieved ? 100.0 * static_cast<double>(s.cache_hits) / static_cast<double>(retrieved) : 0.0,
                  static_cast<unsigned long long>(s.prefetch_hits), static_cast<unsigned long long>(s.retrievals),
                  static_cast<unsigned long long>(s.failures), static_cast<unsigned long long>(s.skipped));
    std::string out = buf;
    if (s.servers.size() > 1) {
        // Which server took how many chunks, and what went wrong where.
        out += "; ";
        out += std::to_string(s.failovers);
        out += " failed over; per server:";
        for (const KbServerStatus& v : s.servers) {
            const char* state = v.state == KbServerState::Up ? "up" : v.state == KbServerState::Down ? "down"
                                : v.state == KbServerState::Behind                                   ? "behind"
                                                                                                     : "incompatible";
            out += &v == &s.servers.front() ? " " : ", ";
            out += printable(v.url);
            out += " ";
            out += std::to_string(v.chunks);
            out += " chunks";
            if (v.failures) {
                out += " ";
                out += std::to_string(v.failures);
                out += " failed";
            }
            out += " (";
            out += state;
            out += ")";
        }
    }
    if (!s.last_error.empty()) out += "; last error: " + printable(s.last_error);  // the server's words
    return out;
}

}  // namespace mnemo::cli
