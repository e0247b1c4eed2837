// app::memorize_documents and the document list of a memory folder (app/memorize.hpp,
// app/folder_documents.hpp): what `mnemo memorize` and mnemo-chat's Add documents share, on the
// bundled default model. Documents are read from files, folders and JSONL with errors that say
// where; memorized in batches with progress; a cancel or a refusal leaves the folder as it was;
// a document memorized again replaces its references; a document is removed by its id.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/folder_documents.hpp"
#include "app/memorize.hpp"
#include "fixtures/vq_memory_folder.hpp"
#include "mnemo/error.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "model_test_util.hpp"

namespace fs = std::filesystem;
using namespace mnemo;

namespace {

const std::string kModel = std::string(MNEMO_SOURCE_DIR) + "/assets/default-model";

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// A folder's files as they are, to see that a refused or cancelled write changed nothing.
std::string snapshot(const fs::path& folder) {
    return slurp(folder / "manifest.json") + slurp(folder / "references.jsonl") + slurp(folder / "records.bin");
}

class AppMemorize : public ::testing::Test {
protected:
    void SetUp() override {
        tmp_ = fs::temp_directory_path() / ("mnemo-app-memorize-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(tmp_);
        fs::create_directories(tmp_);
        session_ = test::open_model(kModel, 256);
        tok_ = load_tokenizer(kModel);
    }
    void TearDown() override { fs::remove_all(tmp_); }

    std::string write(const std::string& name, const std::string& text) {
        const fs::path p = tmp_ / name;
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << text;
        return p.string();
    }

    fs::path tmp_;
    std::unique_ptr<Session> session_;
    std::unique_ptr<Tokenizer> tok_;
};

TEST_F(AppMemorize, ReadsFilesFoldersAndJsonlWithWhereEachCameFrom) {
    const std::string txt = write("notes/ferry.txt", "The ferry leaves at seven.\n");
    write("notes/sub/harbour.md", "# The harbour\n\nIt has three cranes.\n");
    const std::string jsonl = write("docs.jsonl", "{\"id\": \"k1\", \"text\": \"Keys open doors.\", \"title\": \"Keys\"}\n"
                                                  "{\"id\": 7, \"text\": \"Seven seas.\"}\n");
    const auto docs = app::read_documents({txt, (tmp_ / "notes" / "sub").string(), jsonl});
    ASSERT_EQ(docs.size(), 4u);
    EXPECT_EQ(docs[0].doc_id, "ferry.txt");
    EXPECT_EQ(docs[0].title, "The ferry leaves at seven.");
    EXPECT_EQ(docs[0].source, fs::absolute(txt).lexically_normal().string());
    EXPECT_EQ(docs[1].doc_id, "harbour.md");  // its path inside the folder given
    EXPECT_EQ(docs[1].title, "The harbour");
    EXPECT_EQ(docs[1].source, (tmp_ / "notes" / "sub" / "harbour.md").string());
    EXPECT_EQ(docs[2].doc_id, "k1");
    EXPECT_EQ(docs[2].title, "Keys");
    EXPECT_EQ(docs[3].doc_id, "7");
    // Titles given as titles are counted by BM25; a plain text's first line and an id are shown only.
    EXPECT_FALSE(docs[0].title_given);
    EXPECT_TRUE(docs[1].title_given);
    EXPECT_TRUE(docs[2].title_given);
    EXPECT_FALSE(docs[3].title_given);
}

TEST_F(AppMemorize, BadInputIsNamed) {
    const std::string bad = write("bad.jsonl", "{\"id\": \"a\", \"text\": \"fine\"}\n{\"id\": \"b\", \"text\": }\n");
    try {
        app::read_documents({bad});
        FAIL() << "a broken JSONL line was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("bad.jsonl': line 2"), std::string::npos) << e.what();
    }
    const std::string a = write("one/same.txt", "first\n"), b = write("two/same.txt", "second\n");
    try {
        app::read_documents({a, b});
        FAIL() << "two documents with one id were accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("has the id of document 'same.txt' (" + a + ")"), std::string::npos) << e.what();
    }
    const std::string latin1 = write("latin1.txt", "caf\xe9\n");
    try {
        app::read_documents({latin1});
        FAIL() << "a text that is not UTF-8 was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("byte 3 is not valid UTF-8"), std::string::npos) << e.what();
    }
}

TEST_F(AppMemorize, MemorizesInBatchesWithProgressAndListsTheDocuments) {
    std::string many;
    for (int i = 0; i < 40; ++i) many += "Paragraph " + std::to_string(i) + " of the long document.\n\n";
    const auto docs = app::read_documents({write("long.txt", many), write("short.md", "# Short\n\nOne line.\n")});
    const std::string folder = (tmp_ / "memories").string();
    std::vector<app::MemorizeProgress> seen;
    app::MemorizeOptions o;
    o.batch = 8;
    o.progress = [&](const app::MemorizeProgress& p) { seen.push_back(p); };
    const app::MemorizeResult r = app::memorize_documents(*session_, *tok_, docs, folder, o);
    EXPECT_EQ(r.documents, 2u);
    EXPECT_EQ(r.references, 42u);  // 40 paragraphs, then "# Short" and "One line."
    EXPECT_EQ(r.total, 42u);
    // Before the first batch, then after each of the 6 batches of at most 8.
    ASSERT_EQ(seen.size(), 1u + 6u);
    EXPECT_EQ(seen.front().references_done, 0u);
    EXPECT_LT(seen.front().eta_seconds(), 0);  // unknown before a batch is timed
    for (size_t i = 1; i < seen.size(); ++i) {
        EXPECT_EQ(seen[i].references_done, std::min<size_t>(42, 8 * i));
        EXPECT_EQ(seen[i].references_total, 42u);
    }
    EXPECT_GT(seen.back().references_per_second(), 0);
    EXPECT_EQ(seen.back().eta_seconds(), 0);

    const auto listed = app::list_folder_documents(folder);
    ASSERT_EQ(listed.size(), 2u);
    EXPECT_EQ(listed[0].doc_id, "long.txt");
    EXPECT_EQ(listed[0].references, 40u);
    EXPECT_EQ(listed[0].title, "Paragraph 0 of the long document.");
    EXPECT_EQ(listed[1].doc_id, "short.md");
    EXPECT_EQ(listed[1].title, "Short");
    EXPECT_EQ(listed[1].references, 2u);
    EXPECT_GT(listed[1].tokens, 0u);
    // The engine reads the same folder back, titles and sources included.
    const MemoryFolderContents c = read_memory_folder(folder);
    ASSERT_EQ(c.references.size(), 42u);
    EXPECT_EQ(c.references.back().title, "Short");
    EXPECT_EQ(c.references.back().source, (tmp_ / "short.md").string());
}

TEST_F(AppMemorize, UpdateReplacesADocumentAndRemoveDropsIt) {
    const std::string folder = (tmp_ / "memories").string();
    app::memorize_documents(*session_, *tok_,
                            app::read_documents({write("a.txt", "The keeper lives on the north rock.\n\nHe paints the lamp.\n"),
                                                 write("b.txt", "The ferry leaves at seven.\n")}),
                            folder);
    app::MemorizeOptions update;
    update.write = app::FolderWrite::Update;
    const auto r = app::memorize_documents(*session_, *tok_, app::read_documents({write("new/a.txt", "The keeper lives on the south rock.\n")}),
                                           folder, update);
    EXPECT_EQ(r.replaced_documents, 1u);
    EXPECT_EQ(r.dropped, 2u);
    EXPECT_EQ(r.kept, 1u);
    EXPECT_EQ(r.total, 2u);
    const auto refs = read_memory_folder(folder).references;
    ASSERT_EQ(refs.size(), 2u);
    EXPECT_EQ(refs[0].doc_id + ": " + refs[0].text, "b.txt: The ferry leaves at seven.");
    EXPECT_EQ(refs[1].doc_id + ": " + refs[1].text, "a.txt: The keeper lives on the south rock.");

    const app::RemovedDocuments removed = app::remove_folder_documents(folder, {"b.txt"});
    EXPECT_EQ(removed.documents, 1u);
    EXPECT_EQ(removed.references, 1u);
    EXPECT_EQ(removed.remaining, 1u);
    ASSERT_EQ(app::list_folder_documents(folder).size(), 1u);
    EXPECT_EQ(app::list_folder_documents(folder)[0].doc_id, "a.txt");
    // An id the folder does not hold: named, nothing removed.
    const std::string before = snapshot(folder);
    try {
        app::remove_folder_documents(folder, {"a.txt", "nope.txt"});
        FAIL() << "an unknown document was removed";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("holds no document 'nope.txt'"), std::string::npos) << e.what();
    }
    EXPECT_EQ(snapshot(folder), before);
}

TEST_F(AppMemorize, ACancelLeavesTheFolderAsItWas) {
    const std::string folder = (tmp_ / "memories").string();
    app::memorize_documents(*session_, *tok_, app::read_documents({write("a.txt", "Kept as it is.\n")}), folder);
    const std::string before = snapshot(folder);
    std::string many;
    for (int i = 0; i < 64; ++i) many += "Line " + std::to_string(i) + ".\n\n";
    std::atomic<bool> cancel{false};
    app::MemorizeOptions o;
    o.write = app::FolderWrite::Update;
    o.batch = 8;
    o.cancel = &cancel;
    size_t batches = 0;
    o.progress = [&](const app::MemorizeProgress& p) {
        if (p.references_done > 0 && ++batches == 2) cancel = true;  // after the second batch
    };
    EXPECT_THROW(app::memorize_documents(*session_, *tok_, app::read_documents({write("many.txt", many)}), folder, o), Cancelled);
    EXPECT_EQ(batches, 2u);
    EXPECT_EQ(snapshot(folder), before);
    EXPECT_FALSE(fs::exists(folder + ".partial"));
}

TEST_F(AppMemorize, ACompressedFolderIsRefusedUnchanged) {
    const std::string f32 = (tmp_ / "f32").string(), vq = (tmp_ / "vq").string();
    app::memorize_documents(*session_, *tok_, app::read_documents({write("a.txt", "Some text.\n")}), f32);
    test::write_vq_copy(f32, vq);
    const std::string before = snapshot(vq);
    app::MemorizeOptions o;
    o.write = app::FolderWrite::Update;
    try {
        app::memorize_documents(*session_, *tok_, app::read_documents({write("b.txt", "More text.\n")}), vq, o);
        FAIL() << "new memories were added to a compressed folder";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("memory folder '" + vq + "' holds compressed (vq) memories, which cannot be added to"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(snapshot(vq), before);
    // Removing a document keeps the codes and the codebooks.
    EXPECT_EQ(app::remove_folder_documents(vq, {"a.txt"}).remaining, 0u);
    EXPECT_NE(read_memory_folder(vq).codec, nullptr);
}

// BM25 counts each reference's document title with its text (mnemo/memory/retrieval_terms.hpp):
// a question naming a town finds the town's own facts, a fact worded away from the question
// ("dates from" for "founded") included, before another document's "was founded" or its mention of
// the town. Without the titles (a folder written before they were kept) the same folder ranks the
// other documents first: what made 2.3 % of the default model's training questions miss their fact.
// The corpus: the default model's whole world (assets/world/knowledge.jsonl, 2,800 documents), so
// that the terms' document frequencies are a bank's: in a few lines "founded" would be rare.
TEST_F(AppMemorize, AQuestionFindsTheFactsOfTheDocumentItNames) {
    const std::string corpus = std::string(MNEMO_SOURCE_DIR) + "/assets/world/knowledge.jsonl";
    const std::string folder = (tmp_ / "memories").string();
    app::memorize_documents(*session_, *tok_, app::read_documents({corpus}), folder);
    MemoryFolderContents c = read_memory_folder(folder);
    ASSERT_EQ(c.references.size(), 8400u);
    for (const MemoryReference& r : c.references) EXPECT_EQ(r.title_tokens, tok_->encode(r.title, false)) << r.title;

    const std::vector<int32_t> question = tok_->encode("When was Deahailart founded?", false);
    ChunkQuery q;
    q.tokens = &question;
    const auto top_three = [&](const std::string& dir) {
        std::vector<std::string> out;
        for (const auto& [id, score] : FolderMemorySource(dir, c.model, RetrievalMode::BM25).rank(q, 3))
            out.push_back(c.references[id].text);
        return out;
    };
    std::vector<std::string> with_titles = top_three(folder);
    std::sort(with_titles.begin(), with_titles.end());
    EXPECT_EQ(with_titles, (std::vector<std::string>{"The emblem of Deahailart is a owl.", "The roofs of Deahailart are painted orange.",
                                                     "The town of Deahailart dates from 1619."}));  // the town's own three facts

    for (MemoryReference& r : c.references) r.title_tokens.clear();
    const std::string untitled = (tmp_ / "untitled").string();
    write_memory_folder(untitled, c.model, c.memories, c.references, false, c.codec.get());
    const std::vector<std::string> without = top_three(untitled);
    EXPECT_EQ(std::find(without.begin(), without.end(), "The town of Deahailart dates from 1619."), without.end());
}

}  // namespace
