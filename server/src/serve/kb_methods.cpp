// The seven methods of the KnowledgeBase service (docs/kb-protocol.md, "Calls"), each given its
// decoded request inside the call frame of kb_service.cpp. Errors a client sees never carry the
// server's file paths (bank errors do: those go to CallNote::server_error, for the log).
#include <algorithm>
#include <unordered_set>

#include "bank/bank.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "serve/call_io.hpp"
#include "serve/kb_service.hpp"
#include "serve/reply_text.hpp"
#include "serve/request_checks.hpp"
#include "serve/shard_fanout.hpp"

namespace mnemo::kb {
namespace {

using grpc::Status;
using grpc::StatusCode;

std::string version_prefix(const Bank& bank) { return "bank version " + std::to_string(bank.version()) + ": "; }

void fill_bank_info(const Bank& bank, v1::BankInfo* info) {
    const MemoryFolderModel& m = bank.model();
    info->set_bank_version(bank.version());
    info->set_model_type(utf8_for_reply(m.model_type));
    info->set_model_fingerprint(utf8_for_reply(m.fingerprint));
    info->set_model_json(utf8_for_reply(memory_model_to_json(m).dump()));
    info->set_key_codebook_sha256(bank.codec().keys.sha256);
    info->set_value_codebook_sha256(bank.codec().values.sha256);
    info->set_record_bytes(bank.record_bytes());
    info->set_count(bank.count());
    info->set_segments(bank.segments());
    info->set_has_tokenizer(bank.tokenizer() != nullptr);
    info->set_retired(bank.retired_count());
    info->set_documents(bank.documents().all().size());
}

void fill_document(const Bank& bank, const std::string& doc_id, const BankDocument* d, v1::DocumentInfo* out) {
    out->set_doc_id(utf8_for_reply(doc_id));
    if (!d) return;  // not a live document: version 0, no references
    out->set_version(d->version);
    out->set_references(static_cast<uint32_t>(d->ids.size()));
    const BankReference& first = bank.reference(d->ids.front());
    out->set_title(utf8_for_reply(first.title));
    out->set_source(utf8_for_reply(first.source));
}

// InfoRequest.doc_ids, one entry each in order, then up to list_documents live documents after
// list_after (the documents are sorted by doc_id, so a page is a binary search and a slice).
void fill_documents(const Bank& bank, const v1::InfoRequest& req, v1::InfoReply* out) {
    for (const std::string& id : req.doc_ids()) fill_document(bank, id, bank.documents().find(id), out->add_documents());
    if (req.list_documents() == 0) return;
    const std::vector<BankDocument>& all = bank.documents().all();
    auto it = std::upper_bound(all.begin(), all.end(), req.list_after(), [](const std::string& k, const BankDocument& d) { return k < d.doc_id; });
    if (req.list_after().empty()) it = all.begin();
    for (uint32_t n = 0; it != all.end() && n < req.list_documents(); ++it, ++n) fill_document(bank, it->doc_id, &*it, out->add_documents());
    out->set_more_documents(it != all.end());
}

// A unary method's one reply; when it cannot be sent, why the call ends.
Status reply(CallIo& io, const google::protobuf::Message& m) {
    if (io.send(m)) return Status::OK;
    const Status state = io.state();
    return state.ok() ? Status(StatusCode::CANCELLED, "the reply could not be sent (the client went away)") : state;
}

// A record the bank refused to serve (its checks failed): the client learns which id and that
// nothing damaged was sent; the bank's message, with the server's paths, goes to the log.
Status damaged_record(CallIo& io, const Bank& bank, uint32_t id, const std::exception& e) {
    io.note().server_error = e.what();
    return Status(StatusCode::DATA_LOSS, version_prefix(bank) + "record " + std::to_string(id) +
                                             " failed the server's integrity check and was not sent (the server's log has the details)");
}

}  // namespace

Status KbService::info(const v1::InfoRequest& req, CallIo& io) {
    const std::shared_ptr<const Bank> bank = bank_.current();
    const Status st = check_info(req, config_.limits);
    if (!st.ok()) return st;
    v1::InfoReply out;
    fill_bank_info(*bank, out.mutable_bank());
    fill_documents(*bank, req, &out);
    out.set_server_version(utf8_for_reply(config_.server_version));
    for (const auto& [name, value] : counters_.snapshot()) (*out.mutable_counters())[name] = value;
    out.set_max_k(config_.limits.max_k);
    out.set_max_ids_per_request(config_.limits.max_ids_per_request);
    out.set_max_streams_per_client(config_.limits.max_streams_per_client);
    out.set_max_receive_message_bytes(config_.limits.max_receive_bytes);
    out.set_max_call_seconds(config_.limits.max_call_seconds);
    out.set_accepts_documents(config_.editor && config_.editor->can_add());
    out.set_max_add_documents(config_.limits.max_add_documents);
    out.set_max_add_bytes(config_.limits.max_add_bytes);
    out.set_shard(bank->shard());
    out.set_shards(bank->shards());
    out.set_shard_peers(config_.shard_peers ? static_cast<uint32_t>(config_.shard_peers->size()) : 0);
    return reply(io, out);
}

Status KbService::health(const v1::HealthRequest&, CallIo& io) {
    const std::shared_ptr<const Bank> bank = bank_.current();
    v1::HealthReply out;
    out.set_status(bank ? v1::HealthReply::SERVING : v1::HealthReply::NOT_SERVING);
    if (bank) {
        out.set_bank_version(bank->version());
        out.set_shard(bank->shard());
        out.set_shards(bank->shards());
    }
    return reply(io, out);
}

Status KbService::retrieve_into(CallIo& io, const Bank& bank, const v1::RetrieveRequest& req, v1::RetrieveReply* out) const {
    Status st = check_retrieve(req, shape_of(bank), config_.limits);
    if (!st.ok()) return st;
    // Shard requests are between the nodes of an index (their tokens' scope), and shard tokens
    // make nothing else: a client would otherwise see rankings deeper than max_k, uncut.
    if (req.has_shard() && !scope_allows(io.scope, TokenScope::Shard))
        return Status(StatusCode::PERMISSION_DENIED, "client '" + io.client + "' has the " + scope_name(io.scope) +
                                                         " scope; a shard request (RetrieveRequest.shard) needs shard or admin");
    if (!req.has_shard() && io.scope == TokenScope::Shard)
        return Status(StatusCode::PERMISSION_DENIED, "client '" + io.client + "' has the shard scope, which asks for shard rankings only "
                                                     "(RetrieveRequest.shard); a client's Retrieve needs read");
    std::vector<float> vector(req.vector().begin(), req.vector().end());
    std::vector<int32_t> tokens(req.tokens().begin(), req.tokens().end());
    if (!req.text().empty()) {
        tokens = bank.tokenizer()->encode(req.text(), false);
        if (tokens.empty() && vector.empty()) return Status(StatusCode::INVALID_ARGUMENT, "the text gives no tokens and there is no vector");
    }
    BankQuery q;
    q.vector = vector.empty() ? nullptr : &vector;
    q.tokens = tokens.empty() ? nullptr : &tokens;
    q.k = static_cast<int32_t>(req.k());
    q.sources.assign(req.filter().sources().begin(), req.filter().sources().end());
    q.source_prefix = req.filter().source_prefix();
    q.min_relative_score = req.min_relative_score();
    q.min_references = req.min_references();
    // A retrieval passes over the whole bank: it stops when the call must (cap, deadline, cancel).
    q.should_stop = [&io] { return io.should_stop(); };
    std::vector<BankHit> hits;
    try {
        if (req.has_shard()) {
            // Another node of the index asks for this shard's rankings: they are the reply.
            st = answer_shard_request(bank, req, q, config_.limits, out);
            io.note().detail = "shard_request depth=" + std::to_string(req.shard().depth()) + " query=" + (vector.empty() ? "" : "v") +
                               (tokens.empty() ? "" : "t");
            return st;
        }
        st = ranked_hits(io, bank, q, req.k(), &hits);
        if (!st.ok()) return st;
    } catch (const QueryStopped&) {
        const Status state = io.state();
        return state.ok() ? Status(StatusCode::CANCELLED, "the retrieval was stopped") : state;
    } catch (const std::exception& e) {
        io.note().server_error = e.what();
        return Status(StatusCode::INTERNAL, version_prefix(bank) + "retrieval failed (the server's log has the details)");
    }
    for (const BankHit& h : hits) {
        v1::Hit* hit = out->add_hits();
        hit->set_id(h.id);
        hit->set_score(static_cast<float>(h.score));
        const BankReference& ref = bank.reference(h.id);
        hit->set_doc_id(utf8_for_reply(ref.doc_id));
        hit->set_doc_version(ref.doc_version);
        if (!req.omit_texts()) {
            hit->set_text(utf8_for_reply(ref.text));
            hit->set_title(utf8_for_reply(ref.title));
            hit->set_source(utf8_for_reply(ref.source));
        }
    }
    out->set_bank_version(bank.version());
    io.note().detail += "k=" + std::to_string(req.k()) + " query=" + (vector.empty() ? "" : "v") + (tokens.empty() ? "" : "t") +
                        " hits=" + std::to_string(hits.size());
    return Status::OK;
}

Status KbService::ranked_hits(CallIo& io, const Bank& bank, const BankQuery& q, uint32_t k, std::vector<BankHit>* hits) const {
    if (bank.shards() <= 1) {
        *hits = bank.retrieve(q);
        return Status::OK;
    }
    // A shard alone would answer a part of the index as if it were the whole.
    if (!config_.shard_peers)
        return Status(StatusCode::FAILED_PRECONDITION, "this node holds only shard " + std::to_string(bank.shard()) + "/" +
                                                           std::to_string(bank.shards()) +
                                                           " of the index and knows no other shard's node (--shard-peer): ask a node that does");
    return fan_out_retrieve(io, bank, *config_.shard_peers, q, k, hits);
}

Status KbService::retrieve(const v1::RetrieveRequest& req, CallIo& io) {
    const std::shared_ptr<const Bank> bank = bank_.current();
    v1::RetrieveReply out;
    const Status st = retrieve_into(io, *bank, req, &out);
    return st.ok() ? reply(io, out) : st;
}

Status KbService::fetch_memories(const v1::FetchRequest& req, CallIo& io) {
    const std::shared_ptr<const Bank> bank = bank_.current();
    io.note().detail = "ids=" + std::to_string(req.ids_size());
    Status st = check_fetch(req, shape_of(*bank), config_.limits);
    if (!st.ok()) return st;
    v1::MemoryRecord msg;
    // The records read in batches (one parallel read each on RADOS) of 1, 2, 4, ... up to 64: the
    // first record leaves as soon as it is read, as a stream should, and a long fetch still goes
    // in few round trips. A batch that fails is read again one record at a time, so the error
    // names the record as before.
    constexpr int kMaxBatch = 64;
    std::vector<std::string> batch;
    int batch_start = 0, batch_size = 0;
    for (int i = 0; i < req.ids_size(); ++i) {
        const uint32_t id = req.ids(i);
        st = io.state();
        if (!st.ok()) return st;
        if (i == batch_start + batch_size) {
            batch_start = i;
            batch_size = std::min({batch_size ? batch_size * 2 : 1, kMaxBatch, req.ids_size() - i});
            const std::vector<uint32_t> ids(req.ids().begin() + i, req.ids().begin() + i + batch_size);
            try {
                batch = bank->records(ids);
            } catch (const std::exception&) {
                batch.clear();
            }
        }
        msg.set_id(id);
        try {
            msg.set_record(batch.empty() ? bank->record(id) : std::move(batch[static_cast<size_t>(i - batch_start)]));
        } catch (const std::exception& e) {
            return damaged_record(io, *bank, id, e);
        }
        // A write to a client that stopped reading blocks here until the watchdog cancels it.
        if (!io.send(msg)) {
            st = io.state();
            return st.ok() ? Status(StatusCode::CANCELLED, "the client went away during the stream") : st;
        }
        ++io.note().records;
    }
    return Status::OK;
}

Status KbService::retrieve_memories(const v1::RetrieveRequest& req, CallIo& io) {
    const std::shared_ptr<const Bank> bank = bank_.current();
    if (req.has_shard())
        return Status(StatusCode::INVALID_ARGUMENT, "shard is for Retrieve between the nodes of a sharded index, not RetrieveMemories");
    v1::RetrieveMemoriesReply out;
    Status st = retrieve_into(io, *bank, req, out.mutable_retrieval());
    if (!st.ok()) return st;
    // Which hits the client holds: one pass over have_ids against the (at most max_k) hits, so a
    // long have_ids costs a scan, never a hash set as large as the request.
    std::unordered_set<uint32_t> held;
    std::unordered_set<uint32_t> hit_ids;
    for (const v1::Hit& h : out.retrieval().hits()) hit_ids.insert(h.id());
    for (const uint32_t id : req.have_ids())
        if (hit_ids.count(id)) held.insert(id);
    // Up to max_k records read from storage in one batch (in parallel on RADOS); a failed batch
    // is read again one by one so that the error names the record.
    std::vector<uint32_t> wanted;
    for (const v1::Hit& h : out.retrieval().hits())
        if (!held.count(h.id())) wanted.push_back(h.id());
    if (st = io.state(); !st.ok()) return st;
    std::vector<std::string> batch;
    try {
        batch = bank->records(wanted);
    } catch (const std::exception&) {
        batch.clear();
    }
    for (size_t i = 0; i < wanted.size(); ++i) {
        if (st = io.state(); !st.ok()) return st;
        v1::MemoryRecord* rec = out.add_records();
        rec->set_id(wanted[i]);
        try {
            rec->set_record(batch.empty() ? bank->record(wanted[i]) : std::move(batch[i]));
        } catch (const std::exception& e) {
            return damaged_record(io, *bank, wanted[i], e);
        }
        ++io.note().records;
    }
    return reply(io, out);
}

Status KbService::get_codebook(const v1::CodebookRequest& req, CallIo& io) {
    const std::shared_ptr<const Bank> bank = bank_.current();
    Status st = check_codebook(req, shape_of(*bank));
    if (!st.ok()) return st;
    std::string sha = req.sha256();
    for (char& c : sha) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::vector<uint8_t>* bytes = bank->codebook_bytes(sha);
    if (bytes == nullptr) return Status(StatusCode::NOT_FOUND, version_prefix(*bank) + "no codebook " + sha);
    const size_t chunk = req.chunk_bytes() == 0 ? ServeLimits::kDefaultCodebookChunk : req.chunk_bytes();
    v1::CodebookChunk msg;
    size_t offset = 0;
    do {
        st = io.state();
        if (!st.ok()) return st;
        const size_t n = std::min(chunk, bytes->size() - offset);
        msg.set_offset(offset);
        msg.set_total_bytes(bytes->size());
        msg.set_data(reinterpret_cast<const char*>(bytes->data()) + offset, n);
        if (!io.send(msg)) {
            st = io.state();
            return st.ok() ? Status(StatusCode::CANCELLED, "the client went away during the stream") : st;
        }
        offset += n;
    } while (offset < bytes->size());
    io.note().detail = "codebook_bytes=" + std::to_string(bytes->size());
    return Status::OK;
}

Status KbService::reload(const v1::ReloadRequest&, CallIo& io) {
    ReloadOutcome outcome;
    try {
        outcome = reload_bank();
    } catch (const std::exception& e) {
        // Admin scope only: the operator's own message, paths included (docs/kb-protocol.md).
        return Status(StatusCode::FAILED_PRECONDITION, e.what());
    }
    v1::ReloadReply out;
    out.set_previous_version(outcome.previous_version);
    out.set_bank_version(outcome.version);
    io.note().detail = "version=" + std::to_string(outcome.version);
    return reply(io, out);
}

}  // namespace mnemo::kb
