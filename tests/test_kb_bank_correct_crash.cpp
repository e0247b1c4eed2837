// Crash safety of correcting a bank: a replacing `add`, `delete` and `compact` stopped at every
// blob they write and at the publish itself (a storage that fails there: the writer stops as a
// kill would stop it, leaving what it wrote) must leave the previous version published, whole and
// answering as before; the same command run again must then finish, clearing what the stopped one
// left. (`mnemo-kb delete`/`compact` killed with SIGKILL: test_kb_bank_crash.cpp.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "bank/bank_compact.hpp"
#include "bank/bank_delete.hpp"
#include "fixtures/kb_corrected_bank.hpp"

namespace fs = std::filesystem;
using namespace mnemo;

namespace {

class KbBankCorrectCrash : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        root_ = new fs::path(fs::temp_directory_path() / ("mnemo-kb-correct-crash-" + std::to_string(::getpid())));
        fs::remove_all(*root_);
        std::string corpus;
        for (int d = 0; d < 24; ++d) corpus += test::kb_doc_line(std::string("d") + std::to_string(d), 300 + d);
        test::write_text(*root_ / "corpus.jsonl", corpus);
        test::write_text(*root_ / "fix.jsonl", test::kb_doc_line("d6", 7006) + test::kb_doc_line("n1", 7001));
        session_ = test::open_model(test::model_dir("memory3-tiny-bpe"), 128).release();
        kb::build_bank(*session_, test::kb_small_build(*root_ / "base", (*root_ / "corpus.jsonl").string()));
        // Version 2 with retired records (d2 deleted), for compact to work on.
        test::copy_kb_bank(*root_ / "base", *root_ / "retired");
        kb::delete_documents(kb::open_folder_storage((*root_ / "retired").string(), false), {"d2"});
    }
    static void TearDownTestSuite() {
        fs::remove_all(*root_);
        delete session_;
        delete root_;
    }

    // The three commands, on any storage.
    static void replace_d6(const std::shared_ptr<kb::BankStorage>& st) {
        kb::BankBuildOptions o = test::kb_small_build(*root_ / "unused", (*root_ / "fix.jsonl").string());
        o.storage = st;
        o.add = true;
        kb::build_bank(*session_, o);
    }
    static void delete_d1(const std::shared_ptr<kb::BankStorage>& st) { kb::delete_documents(st, {"d1"}); }
    static void compact(const std::shared_ptr<kb::BankStorage>& st) {
        kb::BankCompactOptions o;
        o.storage = st;
        o.segment_records = 10;
        kb::compact_bank(o);
    }

    // Runs `op` on a copy of `from` once per point it can stop at (each blob it writes, then the
    // publish); after each stop the copy must still be version `version`, answer as `from` does,
    // and `op` run again must publish version + 1.
    static void stop_everywhere(const std::string& name, const fs::path& from,
                                const std::function<void(const std::shared_ptr<kb::BankStorage>&)>& op) {
        const auto reference = test::open_kb_bank(from);
        const uint64_t version = reference->version();
        // How many blobs a run writes.
        const fs::path counted = *root_ / (name + "-count");
        test::copy_kb_bank(from, counted);
        auto counter = std::make_shared<test::FailingStorage>(kb::open_folder_storage(counted.string(), false), 0, false);
        op(counter);
        const int writes = counter->writes;
        ASSERT_GE(writes, 1);
        for (int stop = 1; stop <= writes + 1; ++stop) {
            SCOPED_TRACE(name + ": stopped at " + (stop <= writes ? "write " + std::to_string(stop) : std::string("the publish")) + " of " +
                         std::to_string(writes));
            const fs::path dir = *root_ / (name + "-" + std::to_string(stop));
            test::copy_kb_bank(from, dir);
            auto failing = std::make_shared<test::FailingStorage>(kb::open_folder_storage(dir.string(), false), stop <= writes ? stop : 0,
                                                                  stop > writes);
            test::expect_error_with([&] { op(failing); }, {"injected failure"});
            const auto left = test::open_kb_bank(dir);
            EXPECT_EQ(left->version(), version);
            EXPECT_EQ(left->retired_count(), reference->retired_count());
            for (uint32_t id = 0; id < left->count(); ++id)
                if (!left->retired(id)) {
                    EXPECT_NO_THROW(left->record(id)) << "record " << id;
                }
            test::expect_same_rankings(*reference, *left, *reference, 6);
            // Run again: it clears what the stopped run left and publishes.
            op(kb::open_folder_storage(dir.string(), false));
            EXPECT_EQ(test::open_kb_bank(dir)->version(), version + 1);
            fs::remove_all(dir);
        }
    }

    static inline fs::path* root_ = nullptr;
    static inline Session* session_ = nullptr;
};

TEST_F(KbBankCorrectCrash, StoppedDeleteLeavesThePreviousVersion) { stop_everywhere("delete", *root_ / "base", delete_d1); }

TEST_F(KbBankCorrectCrash, StoppedCompactLeavesThePreviousVersion) { stop_everywhere("compact", *root_ / "retired", compact); }

TEST_F(KbBankCorrectCrash, StoppedReplacingAddLeavesThePreviousVersion) { stop_everywhere("add", *root_ / "retired", replace_d6); }

}  // namespace
