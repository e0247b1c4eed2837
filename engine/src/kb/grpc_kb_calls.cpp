// One chunk's calls to one knowledge server (GrpcKbSource, grpc_kb_source.hpp): RetrieveMemories
// in one round trip, or Retrieve and then FetchMemories for the records the host cache lacks, each
// record checked and decoded as it arrives. Both calls of a chunk go to the same server and pin the
// same bank version, and the cache gives and takes only that version's records, so a chunk's
// records are all of one version whatever the servers serve meanwhile.
#include <algorithm>
#include <string>

#include "kb/grpc_kb_source.hpp"
#include "mnemo/error.hpp"

namespace mnemo::detail {

kbv1::RetrieveRequest GrpcKbSource::retrieve_request(const Key& key, const BankId& bank) const {
    kbv1::RetrieveRequest req;
    for (float x : key.vector) req.add_vector(x);
    for (int32_t t : key.tokens) req.add_tokens(t);
    req.set_k(static_cast<uint32_t>(key.k));
    req.set_bank_version(bank.version);
    req.set_key_codebook_sha256(bank.key_sha);
    req.set_value_codebook_sha256(bank.value_sha);
    req.set_omit_texts(!options_.texts);
    req.set_min_relative_score(options_.min_relative_score);
    req.set_min_references(options_.min_references);
    return req;
}

std::shared_ptr<const ExplicitMemory> GrpcKbSource::decode(const KbClient& client, const kbv1::MemoryRecord& record, uint32_t id,
                                                           const char* call) const {
    const std::string where = client.name() + ": " + call + ": record " + std::to_string(id);
    if (record.id() != id) throw Error(where + ": the server sent record " + std::to_string(record.id()) + " in its place");
    const std::string& bytes = record.record();
    return decode_memory_record(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), id, model_.spec, codec_.get(), where);
}

namespace {

// The version a reply says answered must be the one the request pinned: a server that ignored the
// pin (an older or broken one) would otherwise hand over hits whose ids the cache reads as another
// version's records. Taken as the refusal it should have been, so the client asks which version
// it serves (0: a server that does not say).
void check_reply_version(const KbClient& client, const char* call, uint64_t answered, uint64_t pinned) {
    if (answered != 0 && pinned != 0 && answered != pinned)
        throw KbCallError(client.name() + ": " + call + " answered from bank version " + std::to_string(answered) +
                              ", the request pinned version " + std::to_string(pinned),
                          grpc::StatusCode::FAILED_PRECONDITION);
}

std::vector<RetrievedReference> references_of(const google::protobuf::RepeatedPtrField<kbv1::Hit>& hits, size_t k) {
    std::vector<RetrievedReference> out;
    for (const kbv1::Hit& h : hits) {
        if (out.size() == k) break;
        RetrievedReference r;
        r.id = h.id();
        r.score = h.score();
        r.has_score = true;
        r.text = h.text();
        r.title = h.title();
        r.source = h.source();
        r.doc_id = h.doc_id();
        r.doc_version = h.doc_version();
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace

int32_t GrpcKbSource::call_ms(Clock::time_point deadline) const {
    const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int32_t>(std::clamp<int64_t>(left, 1, options_.call_timeout_ms));
}

Answer GrpcKbSource::retrieve_memories(KbClient& client, const Key& key, const BankId& bank, Clock::time_point deadline) {
    kbv1::RetrieveRequest req = retrieve_request(key, bank);
    // The records we hold (most recent first): the server leaves them out. The pointers keep them
    // alive for this answer even if the cache evicts them meanwhile.
    std::unordered_map<uint32_t, std::shared_ptr<const ExplicitMemory>> held;
    for (auto& [id, mem] : cache_.recent(bank.version, max_have_ids_.load())) {
        req.add_have_ids(id);
        held.emplace(id, std::move(mem));
    }
    const kbv1::RetrieveMemoriesReply reply = client.retrieve_memories(req, call_ms(deadline));
    check_reply_version(client, "RetrieveMemories", reply.retrieval().bank_version(), bank.version);
    Answer a;
    a.references = references_of(reply.retrieval().hits(), static_cast<size_t>(key.k));
    std::unordered_map<uint32_t, const kbv1::MemoryRecord*> sent;
    for (const kbv1::MemoryRecord& r : reply.records()) sent.emplace(r.id(), &r);
    uint64_t hits = 0, misses = 0, bytes = 0;
    for (const RetrievedReference& ref : a.references) {
        if (auto s = sent.find(ref.id); s != sent.end()) {
            auto mem = decode(client, *s->second, ref.id, "RetrieveMemories");
            cache_.put(bank.version, ref.id, mem);
            a.memories.push_back(std::move(mem));
            bytes += s->second->record().size();
            ++misses;
        } else if (auto h = held.find(ref.id); h != held.end()) {
            cache_.put(bank.version, ref.id, h->second);  // touch (and keep, if it was evicted meanwhile)
            a.memories.push_back(h->second);
            ++hits;
        } else {
            throw Error(client.name() + ": RetrieveMemories returned hit " + std::to_string(ref.id) +
                        " without its record, and it is not one the client holds");
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    stats_.calls++;
    stats_.cache_hits += hits;
    stats_.cache_misses += misses;
    stats_.records_fetched += misses;
    stats_.record_bytes += bytes;
    stats_.reply_bytes += reply.ByteSizeLong();
    return a;
}

Answer GrpcKbSource::retrieve_then_fetch(KbClient& client, const Key& key, const BankId& bank, Clock::time_point deadline) {
    const kbv1::RetrieveReply reply = client.retrieve(retrieve_request(key, bank), call_ms(deadline));
    check_reply_version(client, "Retrieve", reply.bank_version(), bank.version);
    uint64_t reply_bytes = reply.ByteSizeLong();
    Answer a;
    a.references = references_of(reply.hits(), static_cast<size_t>(key.k));
    a.memories.resize(a.references.size());
    kbv1::FetchRequest fetch;
    std::vector<size_t> slot;  // answer position of each fetched id
    for (size_t i = 0; i < a.references.size(); ++i) {
        if (auto mem = cache_.get(bank.version, a.references[i].id)) {
            a.memories[i] = std::move(mem);
        } else {
            fetch.add_ids(a.references[i].id);
            slot.push_back(i);
        }
    }
    uint64_t bytes = 0;
    if (!slot.empty()) {
        fetch.set_bank_version(bank.version);
        fetch.set_key_codebook_sha256(bank.key_sha);
        fetch.set_value_codebook_sha256(bank.value_sha);
        const std::vector<kbv1::MemoryRecord> records = client.fetch(fetch, call_ms(deadline), &reply_bytes);
        if (records.size() != slot.size())
            throw Error(client.name() + ": FetchMemories sent " + std::to_string(records.size()) + " records, " +
                        std::to_string(slot.size()) + " were asked for");
        for (size_t j = 0; j < slot.size(); ++j) {
            auto mem = decode(client, records[j], fetch.ids(static_cast<int>(j)), "FetchMemories");
            cache_.put(bank.version, mem->id, mem);
            a.memories[slot[j]] = std::move(mem);
            bytes += records[j].record().size();
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    stats_.calls += slot.empty() ? 1 : 2;
    stats_.cache_hits += a.references.size() - slot.size();
    stats_.cache_misses += slot.size();
    stats_.records_fetched += slot.size();
    stats_.record_bytes += bytes;
    stats_.reply_bytes += reply_bytes;
    return a;
}

}  // namespace mnemo::detail
