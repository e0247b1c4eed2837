// What the knowledge server's bank code reads from outside, when it is hostile or broken (issue
// 24): a bank folder whose CURRENT is a FIFO, too large or garbage with terminal escapes; a
// corpus folder with links to files outside it; queries long enough to make a quadratic step
// show. No model needed: banks here are folders written by hand.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "bank/bank.hpp"
#include "bank/bm25_index.hpp"
#include "app/corpus.hpp"
#include "fixtures/error_checks.hpp"
#include "fixtures/fifo.hpp"
#include "process_util.hpp"

namespace {

namespace fs = std::filesystem;
using namespace mnemo;

struct TempDir {
    fs::path path;
    TempDir() {
        std::string t = (fs::temp_directory_path() / "mnemo_kb_inputs_XXXXXX").string();
        path = ::mkdtemp(t.data());
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

TEST(KbBankInputs, ACurrentThatIsAFifoIsRefusedWithoutBlocking) {
    TempDir tmp;
    const fs::path bank = tmp.path / "bank";
    fs::create_directories(bank);
    const std::string fifo = (bank / "CURRENT").string();
    test::make_fifo(fifo);
    const std::string open_error = test::error_without_blocking(fifo, [&] { kb::Bank::open(kb::open_folder_storage(bank.string(), false)); });
    EXPECT_NE(open_error.find("'CURRENT'"), std::string::npos) << open_error;
    EXPECT_NE(open_error.find("FIFO"), std::string::npos) << open_error;
    const std::string poll_error =
        test::error_without_blocking(fifo, [&] { kb::Bank::current_version(*kb::open_folder_storage(bank.string(), false)); });
    EXPECT_NE(poll_error.find("FIFO"), std::string::npos) << poll_error;

    // `serve` on that bank: an error and exit 1, not a process only SIGKILL ends (the timeout
    // kills a hang after 20 s, which fails the test).
    const auto r = mnemo::testing::run_program("mnemo-kb", "serve " + mnemo::testing::shell_quote(bank.string()) + " --listen 127.0.0.1:0 --insecure --no-auth", 20);
    EXPECT_TRUE(mnemo::testing::exited_with(r, 1, {"CURRENT", "FIFO"}));
}

TEST(KbBankInputs, ACurrentThatIsHugeOrGarbageIsAnEscapedError) {
    TempDir tmp;
    const fs::path bank = tmp.path / "bank";
    write(bank / "CURRENT", std::string(1 << 20, 'x'));
    std::string e = test::error_from([&] { kb::Bank::open(kb::open_folder_storage(bank.string(), false)); });
    EXPECT_NE(e.find("more than the 4096"), std::string::npos) << e;

    // A terminal escape and a newline in CURRENT: named, but escaped, in the error.
    write(bank / "CURRENT", "\x1b]0;owned\x07\x1b[2Jmanifest-\n1.json\n");
    e = test::error_from([&] { kb::Bank::open(kb::open_folder_storage(bank.string(), false)); });
    EXPECT_NE(e.find("\\e]0;owned\\x07\\e[2Jmanifest-\\n1.json"), std::string::npos) << e;
    EXPECT_EQ(e.find_first_of("\x1b\x07\n"), std::string::npos) << e;
}

TEST(KbBankInputs, CorpusLinksOutsideTheFolderAreRefusedUnlessAsked) {
    TempDir tmp;
    write(tmp.path / "outside" / "secret.txt", "the server's private notes");
    const fs::path corpus = tmp.path / "corpus";
    write(corpus / "a.txt", "# A\n\nfirst document");
    fs::create_symlink(corpus / "a.txt", corpus / "again.txt");  // inside: fine
    fs::create_directories(corpus / "sub");
    fs::create_symlink(tmp.path / "outside" / "secret.txt", corpus / "sub" / "notes.txt");

    const std::string e = test::error_from([&] { app::read_corpus(corpus.string()); });
    EXPECT_NE(e.find("'sub/notes.txt'"), std::string::npos) << e;
    EXPECT_NE(e.find(fs::canonical(tmp.path / "outside" / "secret.txt").string()), std::string::npos) << e;
    EXPECT_NE(e.find("--follow-external-links"), std::string::npos) << e;

    app::CorpusOptions follow;
    follow.follow_external_links = true;
    const auto docs = app::read_corpus(corpus.string(), follow);
    ASSERT_EQ(docs.size(), 3u);
    EXPECT_EQ(docs[2].source, "sub/notes.txt");
    EXPECT_EQ(docs[2].text, "the server's private notes");

    fs::remove(corpus / "sub" / "notes.txt");
    const auto inside = app::read_corpus(corpus.string());
    ASSERT_EQ(inside.size(), 2u);
    EXPECT_EQ(inside[1].source, "again.txt");
    EXPECT_EQ(inside[1].text, inside[0].text);

    // A linked folder is not entered at all (as before), with or without the flag.
    fs::create_directory_symlink(tmp.path / "outside", corpus / "linked");
    EXPECT_EQ(app::read_corpus(corpus.string(), follow).size(), 2u);
}

TEST(KbBankInputs, BuildAndAddDocumentTheLinkFlag) {
    for (const char* cmd : {"build --help", "add --help"}) {
        const auto r = mnemo::testing::run_program("mnemo-kb", cmd, 30);
        EXPECT_TRUE(mnemo::testing::exited_with(r, 0, {"--follow-external-links"})) << cmd;
    }
}

// Each distinct query term counts once; finding the repeats must not cost the query's length
// squared (a search of the list did: 300,000 tokens took minutes, outside any deadline check).
TEST(KbBankInputs, Bm25QueriesCostTheirLengthNotItsSquare) {
    kb::Bm25Index index;
    index.add({1, 2, 3});
    index.add({3, 4});
    index.finish();
    std::vector<int32_t> query(300000);
    std::iota(query.begin(), query.end(), 5);
    query.push_back(3);
    query.push_back(3);
    const auto t0 = std::chrono::steady_clock::now();
    const auto scores = index.score(query, [](uint32_t) { return true; });
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(scores.size(), 2u);
    EXPECT_LT(secs, 5.0) << "300,000 distinct terms";
    // Repeats still count once: the same scores as the one-term query.
    const auto once = index.score({3}, [](uint32_t) { return true; });
    ASSERT_EQ(once.size(), 2u);
    for (const auto& [doc, s] : scores)
        for (const auto& [doc1, s1] : once)
            if (doc == doc1) {
                EXPECT_DOUBLE_EQ(s, s1);
            }
}

}  // namespace
