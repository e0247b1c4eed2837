// The one Bank implementation (bank.hpp), shared by the files that make it up: bank_open.cpp
// loads and checks a version (manifest, codebooks, texts, vectors, segments, tokenizer) and
// serves its records; bank_open_search.cpp loads or builds the retrieval indexes at open and
// answers queries. After open nothing changes, so every const method runs from any thread
// without a lock (FAISS's const search included). Internal to the bank library.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bank.hpp"
#include "bank_format.hpp"
#include "bank_retired.hpp"
#include "bank_vector_index.hpp"
#include "bm25_index.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::kb {

class OpenBank final : public Bank {
public:
    OpenBank(std::shared_ptr<BankStorage> st, BankManifest m, const BankOpenOptions& o) : storage_(std::move(st)), m_(std::move(m)), options_(o) {}

    void load(const std::string& manifest_where);  // bank_open.cpp

    uint64_t version() const override { return m_.version; }
    const MemoryFolderModel& model() const override { return m_.model; }
    const MemoryCodec& codec() const override { return codec_; }
    const std::vector<uint8_t>* codebook_bytes(const std::string& sha256) const override {
        if (sha256 == codec_.keys.sha256) return &key_bytes_;
        if (sha256 == codec_.values.sha256) return &value_bytes_;
        return nullptr;
    }
    uint64_t count() const override { return m_.count; }
    uint64_t record_bytes() const override { return m_.record_bytes; }
    uint32_t segments() const override { return static_cast<uint32_t>(m_.segments.size()); }
    bool retired(uint32_t id) const override { return retired_.contains(id); }
    uint64_t retired_count() const override { return retired_.size(); }
    const BankDocuments& documents() const override { return documents_; }
    const Tokenizer* tokenizer() const override { return tokenizer_.get(); }
    std::string record(uint32_t id) const override;
    std::vector<std::string> records(const std::vector<uint32_t>& ids) const override;
    const BankReference& reference(uint32_t id) const override;
    const float* vector(uint32_t id) const override;
    uint32_t shard() const override { return options_.shard; }
    uint32_t shards() const override { return options_.shards; }
    std::string index_description() const override { return index_description_; }

    // bank_open_search.cpp
    std::vector<BankHit> retrieve(const BankQuery& q) const override;
    std::vector<BankHit> vector_ranking(const BankQuery& q, size_t depth) const override;
    std::vector<BankHit> bm25_ranking(const BankQuery& q, size_t depth) const override;

private:
    // The segment of a record record() may serve (Error when it does not exist or is retired).
    size_t servable_segment(uint32_t id) const;
    void check_record(const std::string& bytes, uint32_t id, size_t segment) const;
    // bank_open_search.cpp: the vector index and BM25 of this version (stored, or built here for a
    // version without stored ones), over this shard's live records.
    void load_indexes();
    void load_bm25();
    void load_vector_index();
    bool in_shard(uint32_t id) const { return options_.shards <= 1 || id % options_.shards == options_.shard; }
    void load_vectors(const SegmentEntry& s, size_t dim);
    void check_query_vector(const BankQuery& q, const std::string& where) const;

    std::shared_ptr<BankStorage> storage_;
    BankManifest m_;
    BankOpenOptions options_;
    MemoryCodec codec_;
    std::vector<uint8_t> key_bytes_, value_bytes_;
    std::vector<BankReference> refs_;
    // The retrieval vectors this bank holds: every record's, or in a shard the shard's ids' (id /
    // shards is the row).
    std::vector<float> vectors_;
    RetiredSet retired_;
    BankDocuments documents_;
    std::unique_ptr<VectorIndex> vector_index_;  // the shard's live records
    uint32_t nprobe_ = 0;  // 0: default_nprobe of the index's lists
    Bm25Index bm25_;  // whole-bank statistics, the shard's postings
    std::string index_description_;
    std::vector<std::unique_ptr<BlobReader>> readers_;
    std::vector<std::string> segment_where_;
    std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace mnemo::kb
