// The methods that change the served bank (docs/kb-protocol.md, "AddDocuments", "DeleteDocuments"):
// admin scope, one change at a time (bank_editor.hpp), the new version published through the
// bank's writer and then loaded as Reload loads it, so the next Retrieve sees it. Retrieval calls
// keep being answered from the version they took meanwhile. Their errors may name the server's
// bank folder: only admins get them, as with Reload.
#include "bank/bank_delete.hpp"
#include "mnemo/io/printable.hpp"
#include "serve/add_documents_input.hpp"
#include "serve/call_io.hpp"
#include "serve/kb_service.hpp"

namespace mnemo::kb {
namespace {

using grpc::Status;
using grpc::StatusCode;

// How often an AddDocuments call tells the client how far it is: at most every kProgressEvery,
// and at least every kHeartbeat even when nothing moved (a client treats a long silence as a
// server gone).
constexpr std::chrono::milliseconds kProgressEvery{200};
constexpr std::chrono::milliseconds kHeartbeat{1000};
constexpr std::chrono::milliseconds kPoll{100};

Status no_editor() {
    return Status(StatusCode::FAILED_PRECONDITION, "this server does not write its bank (it was started without a bank folder it may change)");
}

Status busy(const std::string& who) {
    return Status(StatusCode::ABORTED, "the bank is being changed by another call (" + who + "); one AddDocuments or DeleteDocuments at a time: retry when it ends");
}

void fill(const AddSnapshot& s, v1::AddDocumentsProgress* p, uint64_t received) {
    p->set_stage(s.stage);
    p->set_documents_received(received);
    p->set_references_done(s.done);
    p->set_references_total(s.total);
    p->set_references_per_second(s.rate);
}

}  // namespace

Status KbService::add_documents(const v1::AddDocumentsRequest&, CallIo& io) {
    if (!config_.editor) return no_editor();
    if (!config_.editor->can_add())
        return Status(StatusCode::FAILED_PRECONDITION,
                      "this server was started without --model DIR, so it cannot memorize documents; restart it with "
                      "`mnemo-kb serve BANK ... --model DIR` (the model the bank was built with)");
    // The lease first: a second writer learns it at once instead of after uploading its texts.
    std::string holder;
    std::unique_ptr<EditLease> lease = config_.editor->try_begin("AddDocuments", io.client, &holder);
    if (!lease) return busy(holder);
    const uint64_t previous = bank_.current()->version();

    AddDocumentsInput input(config_.limits);
    for (;;) {
        if (Status st = io.state(); !st.ok()) return st;
        v1::AddDocumentsRequest m;
        bool end = false;
        if (Status st = io.read(m, &end); !st.ok()) return st;
        if (end) break;
        if (Status st = input.add(m); !st.ok()) return st;
    }
    if (Status st = input.finish(); !st.ok()) return st;
    const uint64_t received = input.documents();
    io.note().detail = "documents=" + std::to_string(received) + " text_bytes=" + std::to_string(input.bytes());

    AddJob job(*config_.editor, std::move(lease), input.take(), [this] { reload_bank(); });
    AddSnapshot last;
    auto last_sent = std::chrono::steady_clock::now() - kHeartbeat;
    bool moved = true;
    while (!job.wait(kPoll)) {
        Status st = io.state();
        const AddSnapshot now = job.snapshot();
        moved |= now.stage != last.stage || now.done != last.done || now.total != last.total;
        const auto t = std::chrono::steady_clock::now();
        if (st.ok() && ((moved && t - last_sent >= kProgressEvery) || t - last_sent >= kHeartbeat)) {
            v1::AddDocumentsProgress p;
            fill(now, &p, received);
            if (!io.send(p)) st = io.state().ok() ? Status(StatusCode::CANCELLED, "the client went away during AddDocuments") : io.state();
            last = now;
            last_sent = t;
            moved = false;
        }
        if (!st.ok()) {
            // The client is gone or out of time: stop at the next batch; finished batches stay
            // checkpointed for a retry. ~AddJob waits for the thread.
            job.cancel();
            return st;
        }
    }
    if (job.published()) {
        const BankBuildReport& r = *job.report();
        io.note().detail += " version=" + std::to_string(r.version) + " references=" + std::to_string(r.references) +
                            " resumed_batches=" + std::to_string(r.resumed_batches);
        if (!job.error().empty())  // published, but the server could not load it
            return Status(StatusCode::FAILED_PRECONDITION, "version " + std::to_string(r.version) + " was published but not loaded: " + job.error());
        v1::AddDocumentsProgress p;
        AddSnapshot done = job.snapshot();
        done.stage = "done";
        fill(done, &p, received);
        v1::AddDocumentsResult* res = p.mutable_result();
        res->set_bank_version(r.version);
        res->set_previous_version(previous);
        res->set_documents(r.documents);
        res->set_references(r.references);
        res->set_replaced_documents(r.replaced_documents);
        res->set_resumed_batches(r.resumed_batches);
        res->set_batches(r.batches);
        for (const std::string& n : r.notes) res->add_notes(n);
        if (!io.send(p)) return io.state().ok() ? Status(StatusCode::CANCELLED, "the client went away before the result") : io.state();
        return Status::OK;
    }
    if (job.cancelled()) return io.state().ok() ? Status(StatusCode::CANCELLED, job.error()) : io.state();
    // A fault of the documents against the bank (a replacing document that cuts into no
    // reference), a model that is not the bank's, or a bank that does not open: nothing published.
    io.note().server_error = job.error();
    return Status(StatusCode::FAILED_PRECONDITION,
                  "nothing was published; still serving version " + std::to_string(bank_.current()->version()) + ": " + job.error());
}

Status KbService::delete_documents(const v1::DeleteDocumentsRequest& req, CallIo& io) {
    if (!config_.editor) return no_editor();
    if (req.doc_ids_size() == 0) return Status(StatusCode::INVALID_ARGUMENT, "doc_ids is empty: name the documents to delete");
    if (static_cast<uint64_t>(req.doc_ids_size()) > config_.limits.max_add_documents)
        return Status(StatusCode::INVALID_ARGUMENT, "doc_ids has " + std::to_string(req.doc_ids_size()) + " entries; at most " +
                                                        std::to_string(config_.limits.max_add_documents) + " (max_add_documents)");
    std::vector<std::string> ids;
    for (int i = 0; i < req.doc_ids_size(); ++i) {
        if (Status st = check_doc_id(req.doc_ids(i), "doc_ids[" + std::to_string(i) + "]"); !st.ok()) return st;
        ids.push_back(req.doc_ids(i));
    }
    std::string holder;
    const std::unique_ptr<EditLease> lease = config_.editor->try_begin("DeleteDocuments", io.client, &holder);
    if (!lease) return busy(holder);
    // Unknown ids are the caller's fault, said before anything is written (delete_documents
    // checks again against what it opens).
    const std::shared_ptr<const Bank> bank = bank_.current();
    std::string missing;
    size_t n_missing = 0;
    for (int i = 0; i < req.doc_ids_size(); ++i) {
        if (bank->documents().find(req.doc_ids(i))) continue;
        if (n_missing++ < 10) missing += (missing.empty() ? "" : ", ") + ("doc_ids[" + std::to_string(i) + "] '" + printable(req.doc_ids(i), 80) + "'");
    }
    if (n_missing)
        return Status(StatusCode::NOT_FOUND, "bank version " + std::to_string(bank->version()) + " has no live document " + missing +
                                                 (n_missing > 10 ? " (and " + std::to_string(n_missing - 10) + " more)" : "") +
                                                 "; nothing was deleted");
    BankDeleteReport r;
    try {
        r = kb::delete_documents(config_.editor->options().storage, ids);
    } catch (const std::exception& e) {
        io.note().server_error = e.what();
        return Status(StatusCode::FAILED_PRECONDITION, std::string("nothing was deleted: ") + e.what());
    }
    try {
        reload_bank();
    } catch (const std::exception& e) {
        return Status(StatusCode::FAILED_PRECONDITION, "version " + std::to_string(r.version) + " was published but not loaded: " + e.what());
    }
    v1::DeleteDocumentsReply out;
    out.set_previous_version(bank->version());
    out.set_bank_version(r.version);
    out.set_documents(r.documents);
    out.set_retired_records(r.retired_records);
    io.note().detail = "documents=" + std::to_string(r.documents) + " version=" + std::to_string(r.version);
    if (!io.send(out)) return io.state().ok() ? Status(StatusCode::CANCELLED, "the client went away before the reply") : io.state();
    return Status::OK;
}

}  // namespace mnemo::kb
