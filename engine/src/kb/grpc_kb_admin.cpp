// The admin calls of the knowledge server's client (mnemo/kb/kb_admin.hpp): AddDocuments streamed
// with a watcher thread that cancels the call when the caller asks or the server falls silent,
// DeleteDocuments, and the document listing paged through Info.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "kb/grpc_kb_client.hpp"
#include "mnemo/kb/kb_admin.hpp"

namespace mnemo {
namespace {

using Clock = std::chrono::steady_clock;
namespace kbv1 = ::mnemo::kb::v1;

// A text is sent in pieces of at most this many bytes: far under any server's receive limit
// (4 MiB by default), and small enough that progress moves while a large document goes out.
constexpr size_t kPieceBytes = 1u << 20;
// Replies hold at most a page of 1024 documents with titles and sources of up to 4 KiB each.
constexpr int kAdminReceiveBytes = 16 << 20;
// AddDocuments runs as long as memorizing takes; the server caps it (max_add_seconds). The
// client's own deadline only bounds a call whose server never answers, which the silence
// watcher already ends.
constexpr int32_t kAddDeadlineMs = 7 * 24 * 3600 * 1000;

detail::KbClient client_for(const KbAdminConnection& c) {
    if (c.timeout_ms <= 0) throw Error("knowledge server '" + c.url + "': timeout_ms must be positive");
    return detail::KbClient(detail::parse_kb_url(c.url), c.token, c.ca_file, kAdminReceiveBytes);
}

// Cancels the call when *cancel turns true or nothing happened on it for `silence`.
class CallWatcher {
public:
    CallWatcher(grpc::ClientContext& ctx, const std::atomic<bool>* cancel, std::chrono::milliseconds silence)
        : ctx_(ctx), cancel_(cancel), silence_(silence), last_(Clock::now()) {
        thread_ = std::thread([this] { loop(); });
    }
    ~CallWatcher() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    void activity() {
        std::lock_guard<std::mutex> lock(mutex_);
        last_ = Clock::now();
    }
    bool cancelled() const { return cancelled_.load(); }
    bool silent() const { return silent_.load(); }

private:
    void loop() {
        std::unique_lock<std::mutex> lock(mutex_);
        while (!cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return done_; })) {
            if (cancel_ && cancel_->load()) {
                cancelled_ = true;
                ctx_.TryCancel();
                return;
            }
            if (Clock::now() - last_ > silence_) {
                silent_ = true;
                ctx_.TryCancel();
                return;
            }
        }
    }

    grpc::ClientContext& ctx_;
    const std::atomic<bool>* cancel_;
    std::chrono::milliseconds silence_;
    std::mutex mutex_;
    std::condition_variable cv_;
    Clock::time_point last_;
    bool done_ = false;
    std::atomic<bool> cancelled_{false}, silent_{false};
    std::thread thread_;
};

}  // namespace

KbAddResult kb_add_documents(const KbAdminConnection& connection, const std::vector<KbAddDocument>& documents,
                             const std::function<void(const KbAddProgress&)>& progress, const std::atomic<bool>* cancel) {
    detail::KbClient client = client_for(connection);
    if (documents.empty()) throw Error(client.name() + ": AddDocuments: no documents to add");
    grpc::ClientContext ctx;
    client.prepare(ctx, kAddDeadlineMs, false);
    KbAddProgress p;
    p.documents_total = documents.size();
    p.stage = "sending";
    if (progress) progress(p);
    KbAddResult result;
    bool have_result = false;
    grpc::Status status;
    // A progress callback that throws (a caller's way to stop) cancels the call, which is then
    // finished properly before the exception goes on.
    std::exception_ptr thrown;
    auto notify = [&](bool* open) {
        if (!progress || thrown) return;
        try {
            progress(p);
        } catch (...) {
            thrown = std::current_exception();
            ctx.TryCancel();
            *open = false;
        }
    };
    {
        CallWatcher watcher(ctx, cancel, std::chrono::milliseconds(connection.timeout_ms));
        const auto stub = client.current();  // outlives the stream
        auto stream = stub->AddDocuments(&ctx);
        bool open = true;  // false once a write failed: the server ended the call (Finish says why)
        for (size_t i = 0; i < documents.size() && open; ++i) {
            const KbAddDocument& d = documents[i];
            size_t offset = 0;
            do {
                kbv1::AddDocumentsRequest m;
                if (offset == 0) {
                    m.set_doc_id(d.doc_id);
                    m.set_title(d.title);
                    m.set_title_guessed(d.title_guessed);
                    m.set_source(d.source);
                    if (i == 0) m.set_total_documents(documents.size());
                } else {
                    m.set_continued(true);
                }
                const size_t n = std::min(kPieceBytes, d.text.size() - offset);
                m.set_text(d.text.substr(offset, n));
                offset += n;
                open = stream->Write(m);
                watcher.activity();
            } while (open && offset < d.text.size());
            p.documents_sent = i + 1;
            notify(&open);
        }
        if (open) stream->WritesDone();
        kbv1::AddDocumentsProgress reply;
        bool reading = true;  // every message is read before Finish (false only once a callback threw)
        while (reading && stream->Read(&reply)) {
            watcher.activity();
            p.stage = reply.stage();
            p.references_done = reply.references_done();
            p.references_total = reply.references_total();
            p.references_per_second = reply.references_per_second();
            if (reply.has_result()) {
                const kbv1::AddDocumentsResult& r = reply.result();
                result.bank_version = r.bank_version();
                result.documents = r.documents();
                result.references = r.references();
                result.replaced_documents = r.replaced_documents();
                result.resumed_batches = r.resumed_batches();
                result.notes.assign(r.notes().begin(), r.notes().end());
                have_result = true;
            }
            notify(&reading);
        }
        status = stream->Finish();
        if (thrown) std::rethrow_exception(thrown);
        if (watcher.cancelled())
            throw Error(client.name() + ": AddDocuments cancelled; the server keeps serving its previous version (batches it "
                                        "finished stay checkpointed: sending the same documents again resumes from them)");
        if (watcher.silent())
            throw Error(client.name() + ": AddDocuments: no word from the server for " + std::to_string(connection.timeout_ms) +
                        " ms; the call was cancelled");
    }
    if (!status.ok()) client.fail("AddDocuments", status);
    if (!have_result) throw Error(client.name() + ": AddDocuments ended without a result (a server older than this client?)");
    return result;
}

std::vector<KbDocumentInfo> kb_list_documents(const KbAdminConnection& connection, size_t max) {
    detail::KbClient client = client_for(connection);
    std::vector<KbDocumentInfo> out;
    std::string after;
    while (out.size() < max) {
        kbv1::InfoRequest req;
        req.set_list_documents(static_cast<uint32_t>(std::min<size_t>(1024, max - out.size())));
        req.set_list_after(after);
        grpc::ClientContext ctx;
        client.prepare(ctx, connection.timeout_ms, false);
        kbv1::InfoReply reply;
        const grpc::Status st = client.current()->Info(&ctx, req, &reply);
        if (!st.ok()) client.fail("Info", st);
        for (const kbv1::DocumentInfo& d : reply.documents()) {
            if (out.size() >= max) break;
            out.push_back({d.doc_id(), d.version(), d.references(), d.title(), d.source()});
        }
        // A server that lists nothing new would make this loop forever: stop on an empty page.
        if (!reply.more_documents() || reply.documents_size() == 0) break;
        after = reply.documents(reply.documents_size() - 1).doc_id();
    }
    return out;
}

uint64_t kb_delete_documents(const KbAdminConnection& connection, const std::vector<std::string>& doc_ids) {
    detail::KbClient client = client_for(connection);
    if (doc_ids.empty()) throw Error(client.name() + ": DeleteDocuments: no document ids");
    kbv1::DeleteDocumentsRequest req;
    for (const std::string& id : doc_ids) req.add_doc_ids(id);
    grpc::ClientContext ctx;
    client.prepare(ctx, connection.timeout_ms, false);
    kbv1::DeleteDocumentsReply reply;
    const grpc::Status st = client.current()->DeleteDocuments(&ctx, req, &reply);
    if (!st.ok()) client.fail("DeleteDocuments", st);
    return reply.bank_version();
}

}  // namespace mnemo
