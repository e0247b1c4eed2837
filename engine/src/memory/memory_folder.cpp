// Memory folders (see mnemo/memory/memory_folder.hpp): writing them atomically, reading and checking
// them, and retrieving from them by retrieval vector (cosine) or BM25 over reference tokens.
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/memory/retrieval_terms.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <unordered_map>

#include "mnemo/error.hpp"
#include "io/json_fields.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/memory/retrieval_settings.hpp"
#include "io/sha256.hpp"
#include "memory/records_file.hpp"

namespace fs = std::filesystem;

namespace mnemo {

using namespace json_fields;  // member, int_member, string_member, int_list
using detail::RecordsFile;

namespace {

constexpr char kFileMagic[8] = {'M', 'N', 'E', 'M', 'O', 'M', 'E', 'M'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kFileHeader = 16;
// memcpy that accepts empty ranges (an empty vector's data() may be null, which memcpy forbids).
void copy_bytes(void* dst, const void* src, size_t n) {
    if (n) std::memcpy(dst, src, n);
}

void put_u32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
uint32_t get_u32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
           static_cast<uint32_t>(p[3]) << 24;
}
void put_floats(std::string& out, const std::vector<float>& v) {
    for (float x : v) {
        uint32_t u;
        std::memcpy(&u, &x, 4);
        put_u32(out, u);
    }
}
json::Value num(int64_t x) { return json::Value::make_number(static_cast<double>(x), true, x); }

void write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) throw Error("cannot write '" + path.string() + "'");
}

// The words BM25 counts: the reference's title and text token ids (language-independent and
// already what the model reads; no second tokenizer to keep in step), as retrieval_terms() says.
struct Bm25 {
    std::vector<std::unordered_map<int32_t, int32_t>> tf;
    std::unordered_map<int32_t, int32_t> df;
    std::vector<int32_t> length;
    double avg_length = 0;

    void build(const std::vector<MemoryReference>& refs) {
        for (const MemoryReference& r : refs) {
            const std::vector<int32_t> terms = retrieval_terms(r.title_tokens, r.tokens);
            std::unordered_map<int32_t, int32_t> t;
            for (int32_t id : terms) ++t[id];
            for (const auto& [id, n] : t) ++df[id];
            length.push_back(static_cast<int32_t>(terms.size()));
            tf.push_back(std::move(t));
        }
        double total = 0;
        for (int32_t l : length) total += l;
        avg_length = length.empty() ? 0 : total / static_cast<double>(length.size());
    }
    // Okapi BM25 (k1 = 1.2, b = 0.75, the usual defaults) with the non-negative idf of Lucene.
    double score(size_t doc, const std::unordered_map<int32_t, int32_t>& query) const {
        constexpr double k1 = 1.2, b = 0.75;
        const double n = static_cast<double>(tf.size());
        double s = 0;
        for (const auto& [id, qn] : query) {
            auto it = tf[doc].find(id);
            if (it == tf[doc].end()) continue;
            const double d = df.at(id);
            const double idf = std::log((n - d + 0.5) / (d + 0.5) + 1.0);
            const double f = it->second;
            s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * length[doc] / std::max(avg_length, 1.0)));
        }
        return s;
    }
};

}  // namespace

MemoryFolderModel memory_folder_model(const Session& session) {
    return {session.summary().model_type, session.model_fingerprint(), session.memory_spec()};
}

RetrievalMode retrieval_mode_from_name(const std::string& name) {
    if (name == "vector") return RetrievalMode::Vector;
    if (name == "bm25") return RetrievalMode::BM25;
    throw Error("unknown retrieval mode '" + name + "' (expected vector or bm25)");
}

void write_memory_folder(const std::string& dir, const MemoryFolderModel& model, const std::vector<WrittenMemory>& memories,
                         const std::vector<MemoryReference>& references, bool replace, const MemoryCodec* codec) {
    const MemorySpec& s = model.spec;
    if (references.size() != memories.size()) throw Error("write_memory_folder: one reference per memory is needed");
    const fs::path target(dir);
    if (fs::exists(target) && !replace)
        throw Error("memory folder '" + dir + "' already exists (choose another folder, or --force to replace it)");
    const fs::path partial = target.string() + ".partial";
    fs::remove_all(partial);
    fs::create_directories(partial);

    const uint64_t record = memory_record_bytes(s, codec);
    std::string rec;
    rec.append(kFileMagic, 8);
    put_u32(rec, kVersion);
    put_u32(rec, static_cast<uint32_t>(record));
    std::string vec, refs;
    for (size_t i = 0; i < memories.size(); ++i) {
        if (memories[i].vector.size() != static_cast<size_t>(s.retrieval_dim))
            throw Error("memory " + std::to_string(i) + ": the retrieval vector has " + std::to_string(memories[i].vector.size()) +
                        " values, expected " + std::to_string(s.retrieval_dim));
        rec += encode_memory_record(memories[i].memory, static_cast<uint32_t>(i), s, codec);
        put_floats(vec, memories[i].vector);
        std::vector<std::pair<std::string, json::Value>> line = {{"id", num(static_cast<int64_t>(i))},
                                                                 {"tokens", json::Value::make_int_array(references[i].tokens)},
                                                                 {"text", json::Value::make_string(references[i].text)}};
        if (!references[i].doc_id.empty()) line.emplace_back("doc_id", json::Value::make_string(references[i].doc_id));
        if (!references[i].title.empty()) line.emplace_back("title", json::Value::make_string(references[i].title));
        if (!references[i].source.empty()) line.emplace_back("source", json::Value::make_string(references[i].source));
        if (!references[i].title_tokens.empty()) line.emplace_back("title_tokens", json::Value::make_int_array(references[i].title_tokens));
        refs += json::Value::make_object(std::move(line)).dump() + "\n";
    }
    std::vector<std::pair<std::string, json::Value>> fields = {{"format", json::Value::make_string("mnemo-memories")},
                                                               {"version", num(kVersion)},
                                                               {"model", memory_model_to_json(model)},
                                                               {"count", num(static_cast<int64_t>(memories.size()))},
                                                               {"encoding", json::Value::make_string(codec ? "vq" : "f32")},
                                                               {"record_bytes", num(static_cast<int64_t>(record))}};
    if (codec) {
        auto book = [&](const VqCodebook& cb, const char* file) {
            const std::vector<uint8_t> bytes = cb.to_bytes();
            write_file(partial / file, std::string(bytes.begin(), bytes.end()));
            return json::Value::make_object({{"file", json::Value::make_string(file)},
                                             {"sha256", json::Value::make_string(sha256_hex(bytes.data(), bytes.size()))}});
        };
        fields.emplace_back("codec", json::Value::make_object({{"keys", book(codec->keys, "keys.mvqc")},
                                                                {"values", book(codec->values, "values.mvqc")}}));
    }
    const json::Value manifest = json::Value::make_object(std::move(fields));
    write_file(partial / "records.bin", rec);
    write_file(partial / "vectors.f32", vec);
    write_file(partial / "references.jsonl", refs);
    write_file(partial / "manifest.json", manifest.dump() + "\n");  // last: its presence marks a complete folder
    if (fs::exists(target)) {
        const fs::path old = target.string() + ".old";
        fs::remove_all(old);
        fs::rename(target, old);
        fs::rename(partial, target);
        fs::remove_all(old);
    } else {
        fs::rename(partial, target);
    }
}

// ---------------------------------------------------------------- reading

namespace {


// A line of references.jsonl holds one reference's tokens and text: far below this.
constexpr uint64_t kMaxReferenceLineBytes = 1 << 20;


// Everything a folder says about itself, checked for internal consistency (not yet against a model).
struct Folder {
    std::string dir;
    MemoryFolderModel model;
    uint64_t count = 0, record_bytes = 0;
    std::unique_ptr<MemoryCodec> codec;
    std::vector<float> vectors;
    std::vector<MemoryReference> refs;

    std::string where(const std::string& file) const { return "memory folder '" + dir + "': " + file; }
};

Folder open_folder(const std::string& dir) {
    Folder f;
    f.dir = dir;
    const fs::path root(dir);
    if (!fs::is_directory(root)) throw Error("memory folder '" + dir + "' does not exist");
    const std::string mwhere = f.where("manifest.json");
    if (!fs::exists(root / "manifest.json")) throw Error(mwhere + " is missing (an incomplete or foreign folder)");
    const json::Value manifest = json::parse_file((root / "manifest.json").string());
    if (!manifest.is_object()) throw Error(mwhere + ": expected a JSON object");
    if (string_member(manifest, "format", mwhere) != "mnemo-memories") throw Error(mwhere + ": field 'format' must be \"mnemo-memories\"");
    const int64_t version = int_member(manifest, "version", mwhere);
    if (version != kVersion) throw Error(mwhere + ": field 'version' is " + std::to_string(version) + ", this build reads version 1");
    f.model = memory_model_from_json(member(manifest, "model", mwhere), mwhere + ": model");
    const MemorySpec& s = f.model.spec;

    const std::string encoding = string_member(manifest, "encoding", mwhere);
    if (encoding == "vq") {
        const json::Value& codec = member(manifest, "codec", mwhere);
        f.codec = std::make_unique<MemoryCodec>();
        for (int kv = 0; kv < 2; ++kv) {
            const char* key = kv == 0 ? "keys" : "values";
            const json::Value& e = member(codec, key, mwhere + ": codec");
            const std::string cw = mwhere + ": codec." + key;
            const std::string file = string_member(e, "file", cw);
            if (file.find('/') != std::string::npos || file.find("..") != std::string::npos)
                throw Error(cw + ": field 'file' must name a file inside the folder");
            (kv == 0 ? f.codec->keys : f.codec->values) = load_vq_codebook((root / file).string(), string_member(e, "sha256", cw));
        }
    } else if (encoding != "f32") {
        throw Error(mwhere + ": field 'encoding' is \"" + encoding + "\"; expected \"f32\" or \"vq\"");
    }

    const int64_t count = int_member(manifest, "count", mwhere);
    if (count < 0) throw Error(mwhere + ": field 'count' must be >= 0");
    f.count = static_cast<uint64_t>(count);
    f.record_bytes = static_cast<uint64_t>(int_member(manifest, "record_bytes", mwhere));
    const uint64_t want_record = memory_record_bytes(s, f.codec.get());
    if (f.record_bytes != want_record)
        throw Error(mwhere + ": field 'record_bytes' is " + std::to_string(f.record_bytes) + ", the shapes it names need " + std::to_string(want_record));

    const std::string rwhere = f.where("records.bin");
    RecordsFile records;
    try {
        records = RecordsFile((root / "records.bin").string());
    } catch (const Error& e) {
        throw with_context(rwhere, e);
    }
    uint8_t head[kFileHeader];
    if (records.size() < kFileHeader || !records.read_at(0, head, kFileHeader)) throw Error(rwhere + ": truncated header");
    if (std::memcmp(head, kFileMagic, 8) != 0) throw Error(rwhere + ": not a memory records file (bad magic)");
    if (get_u32(head + 8) != kVersion || get_u32(head + 12) != f.record_bytes)
        throw Error(rwhere + ": header version/record size disagree with manifest.json");
    // Compared by division: the manifest's count may be anything, and count * record_bytes would
    // wrap. From here on count is bounded by the bytes really on disk.
    const uint64_t size = records.size();
    const uint64_t room = size - kFileHeader;
    if (room % f.record_bytes != 0 || room / f.record_bytes != f.count)
        throw Error(rwhere + ": holds " + std::to_string(size) + " bytes, " + std::to_string(f.count) + " records of " +
                    std::to_string(f.record_bytes) + " bytes need " + std::to_string(kFileHeader) + " + " +
                    std::to_string(f.count) + " x " + std::to_string(f.record_bytes) +
                    (room / f.record_bytes < f.count ? " (truncated)" : ""));

    const std::string vwhere = f.where("vectors.f32");
    const uint64_t want_vector_bytes = f.count * static_cast<uint64_t>(s.retrieval_dim) * 4;
    std::string vbytes;
    try {
        vbytes = read_file_capped((root / "vectors.f32").string(), want_vector_bytes, "retrieval vectors file");
    } catch (const Error& e) {
        throw with_context(vwhere, e);
    }
    if (vbytes.size() != want_vector_bytes)
        throw Error(vwhere + ": holds " + std::to_string(vbytes.size()) + " bytes, expected " + std::to_string(want_vector_bytes));
    f.vectors.resize(vbytes.size() / 4);
    copy_bytes(f.vectors.data(), vbytes.data(), vbytes.size());
    for (float x : f.vectors)
        if (!std::isfinite(x)) throw Error(vwhere + ": holds a value that is not finite");

    const std::string jwhere = f.where("references.jsonl");
    std::string refs;
    try {
        refs = read_file_capped((root / "references.jsonl").string(), std::max<uint64_t>(f.count, 1) * kMaxReferenceLineBytes,
                                "references file");
    } catch (const Error& e) {
        throw with_context(jwhere, e);
    }
    size_t at = 0;
    for (uint64_t i = 0; i < f.count; ++i) {
        if (at >= refs.size()) throw Error(jwhere + ": has " + std::to_string(i) + " lines, expected " + std::to_string(f.count));
        const size_t end = std::min(refs.find('\n', at), refs.size());
        const std::string_view line(refs.data() + at, end - at);
        at = end + 1;
        const std::string lwhere = jwhere + ":" + std::to_string(i + 1);
        const json::Value v = json::parse(line, lwhere);
        if (!v.is_object()) throw Error(lwhere + ": expected an object");
        MemoryReference r;
        r.tokens = int_list(v, "tokens", lwhere);
        r.text = string_member(v, "text", lwhere);
        // Optional: older folders have none.
        if (v.find("doc_id")) r.doc_id = string_member(v, "doc_id", lwhere);
        if (v.find("title")) r.title = string_member(v, "title", lwhere);
        if (v.find("source")) r.source = string_member(v, "source", lwhere);
        if (v.find("title_tokens")) r.title_tokens = int_list(v, "title_tokens", lwhere);
        f.refs.push_back(std::move(r));
    }
    return f;
}

// Record `id` of an open folder, read and checked.
std::shared_ptr<ExplicitMemory> read_record(const Folder& f, const RecordsFile& records, uint32_t id) {
    const std::string where = f.where("records.bin") + ": record " + std::to_string(id);
    std::vector<uint8_t> buf(f.record_bytes);
    if (!records.read_at(kFileHeader + uint64_t{id} * f.record_bytes, buf.data(), buf.size()))
        throw Error(where + ": cannot be read (truncated file?)");
    return decode_memory_record(buf.data(), buf.size(), id, f.model.spec, f.codec.get(), where);
}

}  // namespace

MemoryFolderContents read_memory_folder(const std::string& dir) {
    Folder f = open_folder(dir);
    const RecordsFile records((fs::path(dir) / "records.bin").string());
    MemoryFolderContents c;
    const size_t dim = static_cast<size_t>(f.model.spec.retrieval_dim);
    for (uint32_t i = 0; i < f.count; ++i) {
        WrittenMemory w;
        w.memory = *read_record(f, records, i);
        w.vector.assign(f.vectors.begin() + static_cast<long>(i * dim), f.vectors.begin() + static_cast<long>((i + 1) * dim));
        c.memories.push_back(std::move(w));
    }
    c.model = f.model;
    c.references = std::move(f.refs);
    c.codec = std::move(f.codec);
    return c;
}

struct FolderMemorySource::Impl {
    Folder folder;
    RetrievalMode mode = RetrievalMode::Vector;
    double min_relative_score = 0;
    uint32_t min_references = 0;
    RecordsFile records;
    Bm25 bm25;
    std::unordered_map<uint32_t, std::shared_ptr<const ExplicitMemory>> cache;

    std::string where(const std::string& file) const { return folder.where(file); }
};

FolderMemorySource::FolderMemorySource(const std::string& dir, const MemoryFolderModel& model, RetrievalMode mode,
                                       double min_relative_score, uint32_t min_references)
    : impl_(std::make_unique<Impl>()) {
    Impl& m = *impl_;
    check_min_relative_score(min_relative_score, "memory folder '" + dir + "'");
    check_min_references(min_references, "memory folder '" + dir + "'");
    m.folder = open_folder(dir);
    m.mode = mode;
    m.min_relative_score = min_relative_score;
    m.min_references = min_references;
    check_memory_model(m.folder.model, model, m.folder.codec.get(), m.where("manifest.json"));
    try {
        m.records = RecordsFile((fs::path(dir) / "records.bin").string());
    } catch (const Error& e) {
        throw with_context(m.where("records.bin"), e);
    }
    m.bm25.build(m.folder.refs);
}

FolderMemorySource::~FolderMemorySource() = default;

bool FolderMemorySource::wants_vector() const { return impl_->mode == RetrievalMode::Vector; }

size_t FolderMemorySource::size() const { return impl_->folder.count; }

const MemoryCodec* FolderMemorySource::codec() const { return impl_->folder.codec.get(); }

const MemoryReference& FolderMemorySource::reference(uint32_t id) const {
    if (id >= impl_->folder.count) throw Error(impl_->where("references.jsonl") + ": no reference " + std::to_string(id));
    return impl_->folder.refs[id];
}

std::string FolderMemorySource::describe() const {
    return "memory folder '" + impl_->folder.dir + "' (" + std::to_string(impl_->folder.count) + (impl_->folder.codec ? " compressed" : "") +
           " memories, " + (impl_->mode == RetrievalMode::Vector ? "vector" : "BM25") + " retrieval" +
           relative_cut_suffix(impl_->min_relative_score, impl_->min_references) + ")";
}

std::vector<std::pair<uint32_t, double>> FolderMemorySource::rank(const ChunkQuery& query, int32_t k) const {
    const Impl& im = *impl_;
    const Folder& m = im.folder;
    std::vector<std::pair<uint32_t, double>> scored;
    if (im.mode == RetrievalMode::Vector) {
        if (!query.vector || query.vector->size() != static_cast<size_t>(m.model.spec.retrieval_dim))
            throw Error(describe() + ": the query has no retrieval vector of " + std::to_string(m.model.spec.retrieval_dim) + " values");
        const size_t dim = query.vector->size();
        for (uint64_t i = 0; i < m.count; ++i) {
            double dot = 0;  // both unit length: the cosine similarity of §3.1
            for (size_t d = 0; d < dim; ++d) dot += static_cast<double>(m.vectors[i * dim + d]) * (*query.vector)[d];
            scored.emplace_back(static_cast<uint32_t>(i), dot);
        }
    } else {
        if (!query.tokens) throw Error(describe() + ": the query has no tokens");
        std::unordered_map<int32_t, int32_t> q;
        for (int32_t t : *query.tokens) ++q[t];
        for (uint64_t i = 0; i < m.count; ++i) {
            const double s = im.bm25.score(i, q);
            if (s > 0) scored.emplace_back(static_cast<uint32_t>(i), s);  // no shared term: not relevant
        }
    }
    // Best first; equal scores go to the lower id so every run picks the same memories.
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (static_cast<int64_t>(scored.size()) > k) scored.resize(static_cast<size_t>(std::max(k, 0)));
    scored.resize(count_near_best(scored, im.min_relative_score, im.min_references, [](const auto& s) { return s.second; }));
    return scored;
}

std::vector<std::shared_ptr<const ExplicitMemory>> FolderMemorySource::retrieve(const ChunkQuery& query, int32_t k) {
    std::vector<std::shared_ptr<const ExplicitMemory>> out;
    for (const auto& [id, score] : rank(query, k)) out.push_back(load(id));
    return out;
}

std::shared_ptr<const ExplicitMemory> FolderMemorySource::load(uint32_t id) {
    Impl& m = *impl_;
    if (id >= m.folder.count) throw Error(m.where("records.bin") + ": no record " + std::to_string(id));
    if (auto it = m.cache.find(id); it != m.cache.end()) return it->second;
    std::shared_ptr<const ExplicitMemory> mem = read_record(m.folder, m.records, id);
    m.cache.emplace(id, mem);
    return mem;
}

}  // namespace mnemo
