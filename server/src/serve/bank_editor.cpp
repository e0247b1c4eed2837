#include "serve/bank_editor.hpp"

#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo::kb {

EditLease::~EditLease() {
    std::lock_guard<std::mutex> lock(editor_.mutex_);
    editor_.busy_ = false;
    editor_.busy_with_.clear();
}

BankEditor::BankEditor(BankEditorOptions o) : options_(std::move(o)) {
    if (!options_.storage) throw Error("bank editor: no bank storage");
    if (options_.batch == 0) throw Error("bank editor: the batch size must be positive");
    if (options_.session && !options_.session->reads_memories())
        throw Error("--model '" + printable(options_.model_dir) + "' (" + printable(options_.session->summary().model_type) +
                    ") does not write explicit memories; the bank's model does");
}

void BankEditor::check_model(const Bank& bank) const {
    if (!options_.session) return;
    const MemoryFolderModel mine = memory_folder_model(*options_.session);
    const MemoryFolderModel& theirs = bank.model();
    if (mine.model_type != theirs.model_type || mine.fingerprint != theirs.fingerprint)
        throw Error("--model '" + printable(options_.model_dir) + "' is '" + printable(mine.model_type, 80) + "' (fingerprint " +
                    printable(mine.fingerprint, 80) + "), but the bank holds memories of '" + printable(theirs.model_type, 80) +
                    "' (fingerprint " + printable(theirs.fingerprint, 80) + "); memories only fit the model that wrote them");
}

std::unique_ptr<EditLease> BankEditor::try_begin(const std::string& method, const std::string& client, std::string* busy) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_) {
        const auto secs = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - busy_since_).count();
        if (busy) *busy = busy_with_ + ", running for " + std::to_string(secs) + " s";
        return nullptr;
    }
    busy_ = true;
    busy_with_ = method + " of client '" + client + "'";
    busy_since_ = std::chrono::steady_clock::now();
    return std::unique_ptr<EditLease>(new EditLease(*this));
}

AddJob::AddJob(BankEditor& editor, std::unique_ptr<EditLease> lease, std::vector<app::CorpusDocument> docs,
               std::function<void()> after_publish)
    : lease_(std::move(lease)) {
    if (!editor.can_add()) throw Error("add: the server has no model (--model)");
    thread_ = std::thread([this, &editor, d = std::move(docs), f = std::move(after_publish)]() mutable { run(editor, std::move(d), std::move(f)); });
}

AddJob::~AddJob() {
    cancel();
    if (thread_.joinable()) thread_.join();
}

void AddJob::cancel() { cancel_.store(true, std::memory_order_relaxed); }

bool AddJob::wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t seen = generation_;
    changed_.wait_for(lock, timeout, [&] { return ended_ || generation_ != seen; });
    return ended_;
}

AddSnapshot AddJob::snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return snapshot_;
}

bool AddJob::ended() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ended_;
}

void AddJob::run(BankEditor& editor, std::vector<app::CorpusDocument> docs, std::function<void()> after_publish) {
    const BankEditorOptions& eo = editor.options();
    BankBuildOptions o;
    o.storage = eo.storage;
    o.documents = std::move(docs);
    o.corpus_name = "AddDocuments";
    o.model_dir = eo.model_dir;
    o.add = true;
    o.batch = eo.batch;
    o.cancelled = [this] { return cancel_.load(std::memory_order_relaxed); };
    std::chrono::steady_clock::time_point memorize_start;
    bool memorize_started = false;
    o.progress = [&](const std::string& stage, uint64_t done, uint64_t total) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            const auto now = std::chrono::steady_clock::now();
            if (stage == "memorize") {
                if (!memorize_started) {
                    memorize_started = true;
                    memorize_start = now;
                }
                snapshot_.stage = "memorizing";
                snapshot_.done = done;
                snapshot_.total = total;
                const double secs = std::chrono::duration<double>(now - memorize_start).count();
                if (secs > 0 && done > 0) snapshot_.rate = static_cast<double>(done) / secs;
            } else if (stage == "encode") {
                // Encoding is quick; once it is done the version is being written.
                snapshot_.stage = done == total ? "publishing" : "encoding";
            } else {
                snapshot_.stage = "publishing";
            }
            ++generation_;
        }
        changed_.notify_all();
        if (eo.on_progress) eo.on_progress(stage, done, total, cancel_);
    };
    try {
        BankBuildReport r = build_bank(*eo.session, o);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            report_ = std::move(r);
            published_ = true;
        }
        if (after_publish) after_publish();
    } catch (const BuildCancelled& e) {
        std::lock_guard<std::mutex> lock(mutex_);
        cancelled_ = true;
        error_ = e.what();
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = e.what();
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        lease_.reset();  // before ended_: a client told "done" may start the next change at once
        ended_ = true;
    }
    changed_.notify_all();
}

}  // namespace mnemo::kb
