// Teaching a running knowledge server (docs/kb-protocol.md, "AddDocuments", "DeleteDocuments"):
// a real bank on disk (the tiny memory3 model) served in-process with a BankEditor, driven through
// the engine's admin client (mnemo/kb/kb_admin.hpp) as the desktop app drives it. New documents
// are retrieved by the next call, a doc_id replaces, delete retires; a read token, a server
// without a model and invalid documents are refused with nothing published; a cancelled call
// leaves the old version served and a repeated call resumes from its checkpoints; a second
// change while one runs is refused while retrieval goes on.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include "fixtures/kb_corrected_bank.hpp"
#include "fixtures/kb_serve_harness.hpp"
#include "mnemo/kb/kb_admin.hpp"
#include "serve/add_documents_input.hpp"
#include "serve/bank_editor.hpp"

namespace {

using namespace mnemo::kb;
using namespace mnemo::kb::serve_test;
namespace fs = std::filesystem;
using mnemo::KbAddDocument;
using mnemo::KbAdminConnection;

// The base bank (24 documents "d0".."d23"), built once: training its codec is the slow part.
class KbAddDocuments : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        root_ = new fs::path(fs::temp_directory_path() / ("mnemo-kb-add-docs-" + std::to_string(::getpid())));
        fs::remove_all(*root_);
        std::string corpus;
        for (int d = 0; d < 24; ++d) corpus += mnemo::test::kb_doc_line(std::string("d") + std::to_string(d), 700 + d);
        mnemo::test::write_text(*root_ / "corpus.jsonl", corpus);
        session_ = new std::shared_ptr<mnemo::Session>(mnemo::test::open_model(mnemo::test::model_dir("memory3-tiny-bpe"), 128));
        build_bank(**session_, mnemo::test::kb_small_build(*root_ / "base", (*root_ / "corpus.jsonl").string()));
    }
    static void TearDownTestSuite() {
        fs::remove_all(*root_);
        delete root_;
        delete session_;
    }

    // Serves a fresh copy of the base bank. with_model: the editor can memorize (serve --model).
    void serve(bool with_model = true, ServeLimits limits = {}, size_t batch = 16) {
        dir_ = *root_ / ("bank-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
        mnemo::test::copy_kb_bank(*root_ / "base", dir_);
        storage_ = open_folder_storage(dir_.string(), false);
        BankEditorOptions eo;
        eo.storage = storage_;
        eo.batch = batch;
        if (with_model) {
            eo.session = *session_;
            eo.model_dir = mnemo::test::model_dir("memory3-tiny-bpe");
        }
        eo.on_progress = [this](const std::string& stage, uint64_t done, uint64_t total, const std::atomic<bool>& c) {
            if (hook) hook(stage, done, total, c);
        };
        ServeOptions o;
        o.listen = "127.0.0.1:0";
        o.insecure = true;
        o.tokens = test_tokens();
        o.limits = limits;
        o.server_version = "test";
        o.log = log_.fn();
        o.editor = std::make_shared<BankEditor>(std::move(eo));
        BankProvider provider;
        provider.describe = "bank";
        auto st = storage_;
        provider.open = [st] { return Bank::open(st); };
        provider.current_version = [st] { return Bank::current_version(*st); };
        server_ = KbServer::start(provider, o);
        url_ = "grpc://127.0.0.1:" + std::to_string(server_->port());
        stub_ = v1::KnowledgeBase::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
    }
    void TearDown() override {
        hook = nullptr;
        if (server_) server_->shutdown(std::chrono::milliseconds(500));
        server_.reset();
        fs::remove_all(dir_);
    }

    KbAdminConnection admin(const std::string& token = kAdminToken) const { return {url_, token, "", 10000}; }
    uint64_t served_version() const { return server_->bank()->version(); }
    // The published version on disk (what a restarted server would serve).
    uint64_t published_version() const { return Bank::current_version(*storage_); }

    // The doc_ids (with versions) a text query finds.
    std::multiset<std::string> hits(const std::string& text, grpc::Status* status = nullptr) {
        v1::RetrieveRequest q;
        q.set_text(text);
        q.set_k(8);
        v1::RetrieveReply r;
        const grpc::Status s = stub_->Retrieve(ctx(kReadToken).get(), q, &r);
        if (status) *status = s;
        else EXPECT_TRUE(s.ok()) << s.error_message();
        std::multiset<std::string> out;
        for (const v1::Hit& h : r.hits()) out.insert(h.doc_id() + " v" + std::to_string(h.doc_version()));
        return out;
    }

    // Runs an add and returns the error message ("" when it succeeded).
    std::string add_error(const std::vector<KbAddDocument>& docs, const KbAdminConnection& c) {
        try {
            mnemo::kb_add_documents(c, docs, nullptr);
        } catch (const std::exception& e) {
            return e.what();
        }
        return "";
    }

    std::function<void(const std::string&, uint64_t, uint64_t, const std::atomic<bool>&)> hook;
    static fs::path* root_;
    static std::shared_ptr<mnemo::Session>* session_;
    fs::path dir_;
    std::shared_ptr<BankStorage> storage_;
    LogSink log_;
    std::unique_ptr<KbServer> server_;
    std::string url_;
    std::unique_ptr<v1::KnowledgeBase::Stub> stub_;
};
fs::path* KbAddDocuments::root_ = nullptr;
std::shared_ptr<mnemo::Session>* KbAddDocuments::session_ = nullptr;

const std::string kZebraText = "The zebra quartet played violins under the lighthouse.\n\nEvery violin was painted with zebra stripes.";
const std::string kZebraFix = "The zebra quartet now plays cellos in the harbour.";

// A title sent with a document is counted by BM25 (app::CorpusDocument::title_given) unless the
// client says it guessed it (title_guessed: a plain text's first line, a file name) or sends none
// (the doc_id stands in); title_guessed on a continuing message is refused like its other fields.
TEST(KbAddDocumentsInput, ATitleIsCountedUnlessGuessedOrAbsent) {
    ServeLimits limits;
    AddDocumentsInput input(limits);
    const auto message = [](const char* id, const char* title, bool guessed) {
        v1::AddDocumentsRequest m;
        m.set_doc_id(id);
        m.set_title(title);
        m.set_title_guessed(guessed);
        m.set_text("Some text.");
        return m;
    };
    ASSERT_TRUE(input.add(message("given", "Zebra quartet", false)).ok());
    ASSERT_TRUE(input.add(message("guessed", "The zebra quartet played.", true)).ok());
    ASSERT_TRUE(input.add(message("absent", "", false)).ok());
    ASSERT_TRUE(input.finish().ok());
    const std::vector<mnemo::app::CorpusDocument> docs = input.take();
    ASSERT_EQ(docs.size(), 3u);
    EXPECT_TRUE(docs[0].title_given);
    EXPECT_FALSE(docs[1].title_given);
    EXPECT_EQ(docs[1].title, "The zebra quartet played.");
    EXPECT_FALSE(docs[2].title_given);
    EXPECT_EQ(docs[2].title, "absent");

    AddDocumentsInput bad(limits);
    ASSERT_TRUE(bad.add(message("one", "One", false)).ok());
    v1::AddDocumentsRequest more;
    more.set_continued(true);
    more.set_title_guessed(true);
    more.set_text(" more");
    const grpc::Status st = bad.add(more);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(st.error_message().find("carries only text"), std::string::npos) << st.error_message();
}

TEST_F(KbAddDocuments, AddedDocumentIsRetrievedReplacedAndDeleted) {
    serve();
    EXPECT_TRUE(hits(kZebraText).count("zebra v2") == 0);
    std::vector<mnemo::KbAddProgress> seen;
    const mnemo::KbAddResult r =
        mnemo::kb_add_documents(admin(), {{"zebra", "Zebra quartet", "notes/zebra.md", kZebraText}}, [&](const mnemo::KbAddProgress& p) { seen.push_back(p); });
    EXPECT_EQ(r.bank_version, 2u);
    EXPECT_EQ(r.documents, 1u);
    EXPECT_GE(r.references, 1u);
    EXPECT_EQ(r.replaced_documents, 0u);
    EXPECT_EQ(served_version(), 2u) << "published and loaded: the next Retrieve uses it";
    EXPECT_GE(hits(kZebraText).count("zebra v2"), 1u);
    // Progress: sending first, the memorizing count reaching the total, stages in order.
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.front().stage, "sending");
    EXPECT_EQ(seen.back().stage, "done");
    EXPECT_EQ(seen.back().references_done, seen.back().references_total);
    EXPECT_EQ(seen.back().references_total, r.references);
    EXPECT_EQ(seen.back().documents_sent, 1u);
    // The server's notes on the version come with the result: this tiny codec, trained on the
    // base's few records, reconstructs a new text markedly worse (server/README.md, "Codec fit").
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find(std::string("the codec reconstructs the ") + std::to_string(r.references) + " new records worse"), std::string::npos)
        << r.notes[0];

    const std::vector<mnemo::KbDocumentInfo> docs = mnemo::kb_list_documents(admin(kReadToken));
    EXPECT_EQ(docs.size(), 25u);
    const auto zebra = std::find_if(docs.begin(), docs.end(), [](const auto& d) { return d.doc_id == "zebra"; });
    ASSERT_NE(zebra, docs.end());
    EXPECT_EQ(zebra->version, 2u);
    EXPECT_EQ(zebra->title, "Zebra quartet");
    EXPECT_EQ(zebra->source, "notes/zebra.md");
    EXPECT_EQ(zebra->references, r.references);
    EXPECT_EQ(mnemo::kb_list_documents(admin(kReadToken), 3).size(), 3u);

    // The same doc_id replaces: the old text's references are retired.
    const mnemo::KbAddResult fix = mnemo::kb_add_documents(admin(), {{"zebra", "Zebra quartet", "notes/zebra.md", kZebraFix}}, nullptr);
    EXPECT_EQ(fix.bank_version, 3u);
    EXPECT_EQ(fix.replaced_documents, 1u);
    EXPECT_EQ(hits(kZebraText).count("zebra v2"), 0u) << "the replaced text is never retrieved";
    EXPECT_GE(hits(kZebraFix).count("zebra v3"), 1u);

    EXPECT_EQ(mnemo::kb_delete_documents(admin(), {"zebra"}), 4u);
    EXPECT_EQ(served_version(), 4u);
    EXPECT_EQ(hits(kZebraFix).count("zebra v3"), 0u);
    EXPECT_EQ(mnemo::kb_list_documents(admin(kReadToken)).size(), 24u);
    // An unknown id: NOT_FOUND naming it, nothing retired.
    mnemo::test::expect_error_with([&] { mnemo::kb_delete_documents(admin(), {"d1", "no-such-doc"}); },
                                   {"NOT_FOUND", "'no-such-doc'", "nothing was deleted", url_});
    EXPECT_EQ(published_version(), 4u);
    EXPECT_NE(log_.all().find("method=AddDocuments status=OK"), std::string::npos) << log_.all();
}

TEST_F(KbAddDocuments, ReadTokenAndUnknownTokenAreRefused) {
    serve();
    const std::string e = add_error({{"zebra", "", "", kZebraText}}, admin(kReadToken));
    EXPECT_NE(e.find("PERMISSION_DENIED"), std::string::npos) << e;
    EXPECT_NE(e.find("needs admin"), std::string::npos) << e;
    EXPECT_NE(add_error({{"zebra", "", "", kZebraText}}, admin("mkb_wrong")).find("UNAUTHENTICATED"), std::string::npos);
    mnemo::test::expect_error_with([&] { mnemo::kb_delete_documents(admin(kReadToken), {"d1"}); }, {"PERMISSION_DENIED"});
    EXPECT_EQ(published_version(), 1u);
}

// Info tells a client whether the server memorizes, and its limits.
TEST_F(KbAddDocuments, InfoSaysWhetherTheServerAcceptsDocuments) {
    ServeLimits limits;
    limits.max_add_documents = 7;
    serve(true, limits);
    v1::InfoReply with;
    ASSERT_TRUE(stub_->Info(ctx(kReadToken).get(), {}, &with).ok());
    EXPECT_TRUE(with.accepts_documents());
    EXPECT_EQ(with.max_add_documents(), 7u);
    EXPECT_EQ(with.max_add_bytes(), limits.max_add_bytes);
    TearDown();
    serve(false);
    v1::InfoReply without;
    ASSERT_TRUE(stub_->Info(ctx(kReadToken).get(), {}, &without).ok());
    EXPECT_FALSE(without.accepts_documents());
}

TEST_F(KbAddDocuments, ServerWithoutModelRefusesToAdd) {
    serve(/*with_model=*/false);
    const std::string e = add_error({{"zebra", "", "", kZebraText}}, admin());
    EXPECT_NE(e.find("FAILED_PRECONDITION"), std::string::npos) << e;
    EXPECT_NE(e.find("--model"), std::string::npos) << e;
    EXPECT_EQ(published_version(), 1u);
    EXPECT_EQ(mnemo::kb_delete_documents(admin(), {"d2"}), 2u) << "deleting needs no model";
}

TEST_F(KbAddDocuments, InvalidDocumentsAreRefusedNamingThemAndNothingIsPublished) {
    ServeLimits limits;
    limits.max_add_documents = 3;
    limits.max_add_bytes = 4000;
    serve(true, limits);
    struct Case {
        std::vector<KbAddDocument> docs;
        std::vector<std::string> words;
    };
    const std::vector<Case> cases = {
        {{{"ok", "", "", "fine text"}, {"bad", "", "", "caf\xC3 au lait"}}, {"documents[1] ('bad')", "not valid UTF-8", "offset 3"}},
        {{{"", "", "", "text"}}, {"documents[0]", "doc_id is empty"}},
        {{{"a\nb", "", "", "text"}}, {"documents[0]", "control character"}},
        {{{"twice", "", "", "one"}, {"twice", "", "", "two"}}, {"documents[1]", "'twice' was already sent"}},
        {{{"empty", "", "", "  \n "}}, {"documents[0] ('empty')", "text is empty", "DeleteDocuments"}},
        {{{"a", "", "", "x"}, {"b", "", "", "y"}, {"c", "", "", "z"}, {"d", "", "", "w"}}, {"max_add_documents"}},
        {{{"big", "", "", std::string(5000, 'a')}}, {"documents[0] ('big')", "max_add_bytes"}},
        {{{std::string(2000, 'i'), "", "", "text"}}, {"documents[0]", "doc_id is 2000 bytes"}},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const std::string e = add_error(cases[i].docs, admin());
        EXPECT_NE(e.find("INVALID_ARGUMENT"), std::string::npos) << "case " << i << ": " << e;
        for (const std::string& w : cases[i].words) EXPECT_NE(e.find(w), std::string::npos) << "case " << i << ": " << e;
    }
    EXPECT_EQ(published_version(), 1u);
    EXPECT_EQ(served_version(), 1u);
    // The server is not left busy by a refused call: a valid one goes through.
    EXPECT_EQ(mnemo::kb_add_documents(admin(), {{"ok", "", "", "fine text about zebras"}}, nullptr).bank_version, 2u);
}

// A long text crosses the client's 1 MiB pieces, with a multi-byte character cut between two.
// (Mostly blank lines, which make no reference: the test sends a large text without spending
// seconds memorizing it.)
TEST_F(KbAddDocuments, LongTextIsSentInPiecesAndReassembled) {
    serve();
    std::string text = "The zebra quartet.\n";
    text.resize((1u << 20) - 1, '\n');
    text += "\xC3\xA9 violins of the lighthouse.";  // 'é' straddles the piece boundary
    const mnemo::KbAddResult r = mnemo::kb_add_documents(admin(), {{"long", "", "", text}}, nullptr);
    EXPECT_EQ(r.bank_version, 2u);
    const auto bank = server_->bank();
    const mnemo::kb::BankDocument* d = bank->documents().find("long");
    ASSERT_NE(d, nullptr);
    std::string joined;
    for (uint32_t id : d->ids) joined += bank->reference(id).text;
    EXPECT_NE(joined.find("\xC3\xA9 violins"), std::string::npos);
}

// Cancelled while memorizing (after two of its batches): nothing published, the old version
// served. The same documents again resume from the two checkpointed batches.
TEST_F(KbAddDocuments, CancelKeepsThePreviousVersionAndARepeatResumes) {
    serve(true, {}, /*batch=*/1);
    std::vector<KbAddDocument> docs;
    for (int i = 0; i < 3; ++i) docs.push_back({"new" + std::to_string(i), "", "", "zebra quartet number " + std::to_string(i) + " plays violins.\n\nA second paragraph."});
    std::atomic<bool> cancel{false};
    std::atomic<bool> first{true};
    hook = [&](const std::string& stage, uint64_t done, uint64_t, const std::atomic<bool>& job_cancelled) {
        if (!first || stage != "memorize" || done != 2) return;
        first = false;
        cancel = true;  // the client cancels ...
        // ... and the job goes on only once the server passed the cancel on, so the next batch
        // boundary stops it: deterministic, whatever the machine's speed.
        EXPECT_TRUE(eventually([&] { return job_cancelled.load(); }, 10000));
    };
    const std::string e = [&] {
        try {
            mnemo::kb_add_documents(admin(), docs, nullptr, &cancel);
        } catch (const std::exception& x) {
            return std::string(x.what());
        }
        return std::string();
    }();
    EXPECT_NE(e.find("cancelled"), std::string::npos) << e;
    EXPECT_FALSE(first.load()) << "the hook ran";
    EXPECT_EQ(published_version(), 1u);
    EXPECT_EQ(served_version(), 1u);
    EXPECT_FALSE(hits("alpha beta gamma river").empty()) << "still answering on version 1";

    // Once the stopped job has given the bank back, the same documents resume.
    mnemo::KbAddResult r;
    ASSERT_TRUE(eventually([&] {
        try {
            r = mnemo::kb_add_documents(admin(), docs, nullptr);
            return true;
        } catch (const std::exception& x) {
            EXPECT_NE(std::string(x.what()).find("ABORTED"), std::string::npos) << x.what();
            return false;
        }
    }, 10000));
    EXPECT_EQ(r.bank_version, 2u);
    EXPECT_EQ(r.resumed_batches, 2u);
    EXPECT_EQ(r.documents, 3u);
    EXPECT_GE(hits("zebra quartet number 1 plays violins").count("new1 v2"), 1u);
}

// A progress callback that throws cancels the call like the cancel flag does, and its exception
// reaches the caller.
TEST_F(KbAddDocuments, ThrowingProgressCallbackCancelsTheCall) {
    serve(true, {}, /*batch=*/1);
    hook = [&](const std::string& stage, uint64_t done, uint64_t, const std::atomic<bool>& job_cancelled) {
        if (stage == "memorize" && done == 1) {
            EXPECT_TRUE(eventually([&] { return job_cancelled.load(); }, 10000));
        }
    };
    struct Stop {};
    bool stopped = false;
    try {
        mnemo::kb_add_documents(admin(), {{"zebra", "", "", kZebraText}}, [](const mnemo::KbAddProgress& p) {
            if (p.stage == "memorizing") throw Stop{};
        });
    } catch (const Stop&) {
        stopped = true;
    }
    EXPECT_TRUE(stopped);
    EXPECT_EQ(published_version(), 1u);
    EXPECT_EQ(served_version(), 1u);
}

// While one add memorizes, a second add and a delete are refused (ABORTED), and retrieval goes on
// from the current version.
TEST_F(KbAddDocuments, OneChangeAtATimeWhileRetrievalGoesOn) {
    serve(true, {}, /*batch=*/1);
    std::atomic<bool> holding{false}, release{false};
    hook = [&](const std::string& stage, uint64_t done, uint64_t, const std::atomic<bool>&) {
        if (stage != "memorize" || done != 1 || release) return;
        holding = true;
        EXPECT_TRUE(eventually([&] { return release.load(); }, 20000));
    };
    mnemo::KbAddResult r;
    std::string error;
    std::thread adder([&] {
        try {
            r = mnemo::kb_add_documents(admin(), {{"zebra", "", "", kZebraText}}, nullptr);
        } catch (const std::exception& e) {
            error = e.what();
        }
    });
    ASSERT_TRUE(eventually([&] { return holding.load(); }, 20000));
    const std::string second = add_error({{"other", "", "", "another text"}}, admin());
    EXPECT_NE(second.find("ABORTED"), std::string::npos) << second;
    EXPECT_NE(second.find("AddDocuments of client 'admin'"), std::string::npos) << second;
    mnemo::test::expect_error_with([&] { mnemo::kb_delete_documents(admin(), {"d1"}); }, {"ABORTED"});
    grpc::Status s;
    EXPECT_FALSE(hits("alpha beta gamma river", &s).empty());
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(served_version(), 1u);
    release = true;
    adder.join();
    EXPECT_EQ(error, "");
    EXPECT_EQ(r.bank_version, 2u);
    EXPECT_EQ(served_version(), 2u);
}

// `serve --model` with a model that is not the bank's is refused at start, naming both.
TEST_F(KbAddDocuments, ModelThatIsNotTheBanksIsRefused) {
    BankEditorOptions eo;
    eo.storage = open_folder_storage((*root_ / "base").string(), false);
    eo.session = mnemo::test::open_model(mnemo::test::model_dir("memory3-tiny-f32"), 128);
    eo.model_dir = "tiny-f32";
    BankEditor editor(std::move(eo));
    const auto bank = Bank::open(open_folder_storage((*root_ / "base").string(), false));
    mnemo::test::expect_error_with([&] { editor.check_model(*bank); }, {"--model 'tiny-f32'", bank->model().fingerprint, "memories only fit"});
}

}  // namespace
