// What a corrected bank looks like on the wire (docs/kb-protocol.md): retired records are never
// hits and FetchMemories answers NOT_FOUND for them; every hit carries its document's version;
// Info counts retired records and documents, describes documents by id and lists them page by
// page. First against FakeBank (fixtures/kb_serve_harness.hpp), then against a real bank on disk
// that `delete`, a replacing `add` and `compact` change under a running server, picked up by Reload.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "bank/bank_compact.hpp"
#include "bank/bank_delete.hpp"
#include "fixtures/kb_corrected_bank.hpp"
#include "fixtures/kb_serve_harness.hpp"

namespace {

using namespace mnemo::kb;
using namespace mnemo::kb::serve_test;
using grpc::StatusCode;
namespace fs = std::filesystem;

v1::InfoReply info(Harness& h, const v1::InfoRequest& req, grpc::Status* status = nullptr) {
    v1::InfoReply out;
    const grpc::Status s = h.stub->Info(ctx(kReadToken).get(), req, &out);
    if (status) *status = s;
    else EXPECT_TRUE(s.ok()) << s.error_message();
    return out;
}

TEST(KbGrpcCorrect, RetiredRecordsAreNeitherHitsNorServed) {
    auto bank = make_bank(4, 12);
    bank->retire_documents({"doc1", "doc4"});  // records 2, 3, 8, 9
    Harness h(bank);
    // Every record's own vector, k = all: the retired ones never come back, the others do.
    for (uint32_t id = 0; id < 12; ++id) {
        v1::RetrieveReply reply;
        ASSERT_TRUE(h.stub->Retrieve(ctx(kReadToken).get(), vector_query(bank->vector_of(id), 12), &reply).ok());
        EXPECT_EQ(reply.hits_size(), 8);
        for (const v1::Hit& hit : reply.hits()) {
            EXPECT_FALSE(bank->retired(hit.id())) << "hit " << hit.id();
            EXPECT_EQ(hit.doc_version(), 4u);
            EXPECT_EQ(hit.doc_id(), "doc" + std::to_string(hit.id() / 2));
        }
        v1::RetrieveRequest tokens;
        tokens.add_tokens(static_cast<int32_t>(id));
        tokens.set_k(5);
        tokens.set_omit_texts(true);
        v1::RetrieveMemoriesReply both;
        ASSERT_TRUE(h.stub->RetrieveMemories(ctx(kReadToken).get(), tokens, &both).ok());
        if (bank->retired(id)) {
            EXPECT_EQ(both.retrieval().hits_size(), 0) << "only record " << id << " holds token " << id;
        }
        for (const v1::Hit& hit : both.retrieval().hits()) {
            EXPECT_FALSE(bank->retired(hit.id()));
            EXPECT_EQ(hit.doc_version(), 4u) << "sent with omit_texts too";
            EXPECT_TRUE(hit.title().empty());
        }
        for (const v1::MemoryRecord& r : both.records()) EXPECT_FALSE(bank->retired(r.id()));
    }
    const FetchResult live = fetch(*h.stub, fetch_ids({0, 1, 11}), kReadToken);
    EXPECT_TRUE(live.status.ok());
    EXPECT_EQ(live.records.size(), 3u);
    const FetchResult gone = fetch(*h.stub, fetch_ids({0, 8}), kReadToken);
    EXPECT_EQ(gone.status.error_code(), StatusCode::NOT_FOUND);
    EXPECT_NE(gone.status.error_message().find("ids[1] = 8 is retired in bank version 4"), std::string::npos) << gone.status.error_message();
    EXPECT_TRUE(gone.records.empty()) << "checked before anything is streamed";
}

TEST(KbGrpcCorrect, InfoCountsAndDescribesDocuments) {
    auto bank = make_bank(3, 12);
    bank->retire_documents({"doc2"});
    ServeLimits limits;
    limits.max_ids_per_request = 4;
    Harness h(bank, limits);
    // The connect-time reply: counts, no documents.
    const v1::InfoReply plain = info(h, {});
    EXPECT_EQ(plain.bank().count(), 12u);
    EXPECT_EQ(plain.bank().retired(), 2u);
    EXPECT_EQ(plain.bank().documents(), 5u);
    EXPECT_EQ(plain.documents_size(), 0);
    // By id, in order; an id the bank does not hold (retired, or never there) has version 0.
    v1::InfoRequest by_id;
    for (const char* id : {"doc5", "doc2", "nope", "doc0"}) by_id.add_doc_ids(id);
    const v1::InfoReply described = info(h, by_id);
    ASSERT_EQ(described.documents_size(), 4);
    EXPECT_EQ(described.documents(0).doc_id(), "doc5");
    EXPECT_EQ(described.documents(0).version(), 3u);
    EXPECT_EQ(described.documents(0).references(), 2u);
    EXPECT_EQ(described.documents(0).title(), "title 10");
    EXPECT_EQ(described.documents(0).source(), "src/a");
    EXPECT_EQ(described.documents(1).version(), 0u);
    EXPECT_EQ(described.documents(1).references(), 0u);
    EXPECT_EQ(described.documents(2).doc_id(), "nope");
    EXPECT_EQ(described.documents(2).version(), 0u);
    EXPECT_EQ(described.documents(3).version(), 3u);
    // Listed in doc_id order, two per page.
    std::vector<std::string> listed;
    v1::InfoRequest page;
    page.set_list_documents(2);
    for (int n = 0; n < 10; ++n) {
        const v1::InfoReply r = info(h, page);
        for (const v1::DocumentInfo& d : r.documents()) listed.push_back(d.doc_id());
        if (!r.more_documents()) break;
        page.set_list_after(r.documents(r.documents_size() - 1).doc_id());
    }
    EXPECT_EQ(listed, (std::vector<std::string>{"doc0", "doc1", "doc3", "doc4", "doc5"}));
    // Too many ids or too long a page: INVALID_ARGUMENT naming the field.
    grpc::Status s;
    v1::InfoRequest many;
    for (int i = 0; i < 5; ++i) many.add_doc_ids("doc" + std::to_string(i));
    info(h, many, &s);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("doc_ids has 5 entries"), std::string::npos) << s.error_message();
    v1::InfoRequest long_page;
    long_page.set_list_documents(ServeLimits::kMaxListDocuments + 1);
    info(h, long_page, &s);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("list_documents"), std::string::npos) << s.error_message();
}

// A real bank (tiny memory3 model) served from its folder: delete, replace and compact publish new
// versions; Reload serves each; a client that pinned the old version is told to reconnect.
TEST(KbGrpcCorrect, CorrectionsOfABankOnDiskAreServedAfterReload) {
    const fs::path root = fs::temp_directory_path() / ("mnemo-kb-grpc-correct-" + std::to_string(::getpid()));
    fs::remove_all(root);
    std::string corpus;
    for (int d = 0; d < 24; ++d) corpus += mnemo::test::kb_doc_line(std::string("d") + std::to_string(d), 500 + d);
    mnemo::test::write_text(root / "corpus.jsonl", corpus);
    mnemo::test::write_text(root / "fix.jsonl", mnemo::test::kb_doc_line("d4", 8004));
    auto session = mnemo::test::open_model(mnemo::test::model_dir("memory3-tiny-bpe"), 128);
    mnemo::kb::build_bank(*session, mnemo::test::kb_small_build(root / "bank", (root / "corpus.jsonl").string()));
    auto storage = open_folder_storage((root / "bank").string(), false);

    ServeOptions o;
    o.listen = "127.0.0.1:0";
    o.insecure = true;
    o.tokens = test_tokens();
    o.server_version = "test";
    o.log = [](const std::string&) {};
    BankProvider provider;
    provider.describe = "bank";
    provider.open = [storage] { return Bank::open(storage); };
    provider.current_version = [storage] { return Bank::current_version(*storage); };
    auto server = KbServer::start(provider, o);
    auto stub = v1::KnowledgeBase::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(server->port()), grpc::InsecureChannelCredentials()));
    auto reload = [&](uint64_t want) {
        v1::ReloadReply r;
        ASSERT_TRUE(stub->Reload(ctx(kAdminToken).get(), {}, &r).ok());
        EXPECT_EQ(r.bank_version(), want);
    };
    // Retrieve by the text of one of d1's references: which documents answer, at which versions.
    const auto v1_bank = Bank::open(storage);
    const std::vector<int32_t>& d1_tokens = v1_bank->reference(v1_bank->documents().find("d1")->ids[0]).tokens;
    const std::vector<int32_t>& d4_tokens = v1_bank->reference(v1_bank->documents().find("d4")->ids[0]).tokens;
    // Every hit as "doc_id vN".
    auto hits = [&](const std::vector<int32_t>& tokens) {
        v1::RetrieveRequest q;
        for (int32_t t : tokens) q.add_tokens(t);
        q.set_k(30);
        v1::RetrieveReply r;
        EXPECT_TRUE(stub->Retrieve(ctx(kReadToken).get(), q, &r).ok());
        std::multiset<std::string> docs;
        for (const v1::Hit& h : r.hits()) docs.insert(h.doc_id() + " v" + std::to_string(h.doc_version()));
        return docs;
    };
    EXPECT_GE(hits(d1_tokens).count("d1 v1"), 1u) << "a reference's own tokens find it";
    EXPECT_GE(hits(d4_tokens).count("d4 v1"), 1u);

    mnemo::kb::delete_documents(storage, {"d1"});
    EXPECT_GE(hits(d1_tokens).count("d1 v1"), 1u) << "still version 1 until the reload";
    reload(2);
    EXPECT_EQ(hits(d1_tokens).count("d1 v1"), 0u);
    EXPECT_FALSE(hits(d1_tokens).empty()) << "the other documents still answer";
    const uint32_t retired_id = v1_bank->documents().find("d1")->ids[0];
    const FetchResult gone = fetch(*stub, fetch_ids({retired_id}), kReadToken);
    EXPECT_EQ(gone.status.error_code(), StatusCode::NOT_FOUND) << gone.status.error_message();

    mnemo::kb::BankBuildOptions add = mnemo::test::kb_small_build(root / "bank", (root / "fix.jsonl").string());
    add.add = true;
    mnemo::kb::build_bank(*session, add);
    reload(3);
    v1::InfoRequest which;
    which.add_doc_ids("d4");
    which.add_doc_ids("d1");
    v1::InfoReply described;
    ASSERT_TRUE(stub->Info(ctx(kReadToken).get(), which, &described).ok());
    const uint64_t n_gone = v1_bank->documents().find("d1")->ids.size() + v1_bank->documents().find("d4")->ids.size();
    EXPECT_EQ(described.bank().retired(), n_gone);
    EXPECT_EQ(described.bank().documents(), 23u);
    ASSERT_EQ(described.documents_size(), 2);
    EXPECT_EQ(described.documents(0).version(), 3u);
    EXPECT_EQ(described.documents(1).version(), 0u);
    EXPECT_EQ(hits(d4_tokens).count("d4 v1"), 0u) << "d4's old text is not retrieved";
    const auto v3_bank = Bank::open(storage);
    EXPECT_GE(hits(v3_bank->reference(v3_bank->documents().find("d4")->ids[0]).tokens).count("d4 v3"), 1u) << "its new text is";

    mnemo::kb::BankCompactOptions c;
    c.storage = storage;
    mnemo::kb::compact_bank(c);
    reload(4);
    v1::InfoReply compacted;
    ASSERT_TRUE(stub->Info(ctx(kReadToken).get(), which, &compacted).ok());
    EXPECT_EQ(compacted.bank().retired(), 0u);
    EXPECT_EQ(compacted.bank().count(), described.bank().count() - n_gone);
    EXPECT_EQ(compacted.documents(0).version(), 3u) << "compact keeps each document's version";
    server->shutdown(std::chrono::milliseconds(500));
    fs::remove_all(root);
}

}  // namespace
