// What lets a running server change its bank (AddDocuments, DeleteDocuments; docs/kb-protocol.md):
// where the bank is written (its storage), the model that memorizes (`serve --model DIR`; without
// it adding is refused, deleting still works), and the rule of one change at a time: a bank has one
// writer (server/README.md), so a second AddDocuments or DeleteDocuments while one runs is refused
// (ABORTED) rather than queued behind an hour of memorizing.
//
// AddJob memorizes on a thread of its own (never on a gRPC thread other calls need), reports its
// progress through a snapshot the call thread polls, and stops between batches when cancelled:
// nothing is published then, and the finished batches stay checkpointed (bank_staging.hpp), so the
// same documents sent again resume.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/corpus.hpp"
#include "bank/bank.hpp"
#include "bank/bank_build.hpp"
#include "bank/bank_storage.hpp"

namespace mnemo {
class Session;
}

namespace mnemo::kb {

struct BankEditorOptions {
    std::shared_ptr<BankStorage> storage;  // the served bank's storage (what BankProvider opens)
    std::shared_ptr<Session> session;      // the bank's model; null: AddDocuments is refused
    std::string model_dir;                 // its folder (tokenizer files), for errors and the bank
    size_t batch = 64;                     // references per memorize call and checkpoint
    // Called on the job's thread at each progress step, after the snapshot is updated, with the
    // job's cancel flag. Tests use it to hold a job at a chosen point; empty in production.
    std::function<void(const std::string& stage, uint64_t done, uint64_t total, const std::atomic<bool>& cancelled)> on_progress;
};

class BankEditor;

// Proof that the caller is the bank's one writer now; given back when destroyed.
class EditLease {
public:
    ~EditLease();
    EditLease(const EditLease&) = delete;
    EditLease& operator=(const EditLease&) = delete;

private:
    friend class BankEditor;
    explicit EditLease(BankEditor& e) : editor_(e) {}
    BankEditor& editor_;
};

class BankEditor {
public:
    explicit BankEditor(BankEditorOptions o);

    bool can_add() const { return options_.session != nullptr; }
    const BankEditorOptions& options() const { return options_; }
    // The model must be the bank's (type and fingerprint): mnemo::Error naming both otherwise.
    // `serve` checks it at start; build_bank checks it again at every add.
    void check_model(const Bank& bank) const;

    // The lease, or null when another change runs: *busy then says which (method, client, since).
    std::unique_ptr<EditLease> try_begin(const std::string& method, const std::string& client, std::string* busy);

private:
    friend class EditLease;
    BankEditorOptions options_;
    std::mutex mutex_;
    bool busy_ = false;
    std::string busy_with_;
    std::chrono::steady_clock::time_point busy_since_;
};

struct AddSnapshot {
    std::string stage = "memorizing";  // "memorizing", "encoding", "publishing"
    uint64_t done = 0, total = 0;      // references
    double rate = 0;                   // references per second since memorizing began (resumed batches count)
};

class AddJob {
public:
    // Starts memorizing `docs` on a new thread under `lease`. after_publish runs on that thread
    // once a version is published (the server loads it there), before the lease is given back.
    AddJob(BankEditor& editor, std::unique_ptr<EditLease> lease, std::vector<app::CorpusDocument> docs,
           std::function<void()> after_publish);
    // Cancels and waits for the thread.
    ~AddJob();

    // Stops at the next batch boundary, publishing nothing (a job already publishing finishes).
    void cancel();
    // Waits up to `timeout` for the job to end or its snapshot to change; true once it ended.
    bool wait(std::chrono::milliseconds timeout);
    AddSnapshot snapshot() const;

    // Once ended: the report, or the error (cancelled() tells a cancel from a failure).
    bool ended() const;
    const std::optional<BankBuildReport>& report() const { return report_; }
    const std::string& error() const { return error_; }
    bool cancelled() const { return cancelled_; }
    bool published() const { return published_; }  // the version was published (after_publish ran)

private:
    void run(BankEditor& editor, std::vector<app::CorpusDocument> docs, std::function<void()> after_publish);

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    AddSnapshot snapshot_;
    uint64_t generation_ = 0;  // bumped with every snapshot change
    bool ended_ = false;
    std::atomic<bool> cancel_{false};
    std::optional<BankBuildReport> report_;
    std::string error_;
    bool cancelled_ = false;
    bool published_ = false;
    std::unique_ptr<EditLease> lease_;
    std::thread thread_;
};

}  // namespace mnemo::kb
