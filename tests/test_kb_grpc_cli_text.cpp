// What a knowledge server says reaches the user's terminal escaped: `mnemo ask --kb` against a
// server in the test (127.0.0.1, the default model's memory facts, f32 records of zeros) whose
// hits carry titles and sources with terminal escape sequences, newlines and a bidi override, and
// whose failure message carries the same. The program must print them as visible escapes
// (mnemo/io/printable.hpp), never as the bytes themselves.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "fixtures/fake_bank_info.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/memory/memory_record.hpp"
#include "mnemo_kb.grpc.pb.h"
#include "model_test_util.hpp"
#include "process_util.hpp"

using namespace mnemo;
namespace kbv1 = mnemo::kb::v1;
using mnemo::testing::exited_with;
using mnemo::testing::run_program;
using mnemo::testing::shell_quote;

namespace {

// Each piece is something a terminal would act on: colour, a new line that looks like the
// program's own, a window-title sequence, a right-to-left override.
const std::string kTitle = "\x1b[31mAmber\nreferences read (0):\xE2\x80\xAE" "txt.exe";
const std::string kSource = "file\x1b]0;owned\x07.txt";
const std::string kFailure = "\x1b[2J\nmnemo: all good";
const std::string kDocId = "notes\x1b[1m.md";

class ChattyKnowledgeBase final : public kbv1::KnowledgeBase::Service {
public:
    ChattyKnowledgeBase(const MemoryFolderModel& model, bool fail) : model_(model), fail_(fail) {
        const MemorySpec& s = model.spec;
        const size_t keep = static_cast<size_t>(s.tokens_per_head);
        const size_t heads = s.memory_layers.size() * static_cast<size_t>(s.kv_heads);
        ExplicitMemory m;
        m.n_valid = s.tokens_per_head;
        for (size_t h = 0; h < heads; ++h)
            for (size_t i = 0; i < keep; ++i) m.indices.push_back(static_cast<int32_t>(i));
        m.keys.assign(heads * keep * static_cast<size_t>(s.head_dim), 0.0f);
        m.values.assign(heads * keep * static_cast<size_t>(s.value_dim), 0.0f);
        record_ = encode_memory_record(m, 0, s, nullptr);
    }

    grpc::Status Info(grpc::ServerContext*, const kbv1::InfoRequest*, kbv1::InfoReply* reply) override {
        mnemo::test::describe_bank(reply, model_, nullptr, record_.size(), 1);
        return grpc::Status::OK;
    }

    grpc::Status RetrieveMemories(grpc::ServerContext*, const kbv1::RetrieveRequest* req, kbv1::RetrieveMemoriesReply* reply) override {
        if (fail_) return {grpc::StatusCode::UNAVAILABLE, kFailure};
        kbv1::Hit* h = reply->mutable_retrieval()->add_hits();
        h->set_id(0);
        h->set_score(1.0f);
        h->set_title(kTitle);
        h->set_source(kSource);
        h->set_doc_id(kDocId);
        h->set_doc_version(4);
        reply->mutable_retrieval()->set_bank_version(1);
        if (req->have_ids().empty()) {
            kbv1::MemoryRecord* r = reply->add_records();
            r->set_id(0);
            r->set_record(record_);
        }
        return grpc::Status::OK;
    }

private:
    MemoryFolderModel model_;
    bool fail_;
    std::string record_;
};

class KbCliText : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        auto session = test::open_model(std::string(MNEMO_SOURCE_DIR) + "/assets/default-model", 256);
        model_ = new MemoryFolderModel(memory_folder_model(*session));
    }
    static void TearDownTestSuite() { delete model_; }

    // `mnemo ask --kb` against the service; its stdout and stderr together.
    mnemo::testing::ProcessResult ask(bool fail) {
        ChattyKnowledgeBase service(*model_, fail);
        grpc::ServerBuilder b;
        int port = 0;
        b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
        b.RegisterService(&service);
        auto server = b.BuildAndStart();
        EXPECT_TRUE(server);
        const auto r = run_program("mnemo", "ask --kb grpc://127.0.0.1:" + std::to_string(port) +
                                                " -q " + shell_quote("What colour is the Lelosk ring?"),
                                   60);
        server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
        return r;
    }

    static inline MemoryFolderModel* model_ = nullptr;
};

bool has_raw_controls(const std::string& out) {
    return out.find('\x1b') != std::string::npos || out.find('\x07') != std::string::npos ||
           out.find("\xE2\x80\xAE") != std::string::npos;
}

// The reference line names the document and the bank version that added its text (Hit.doc_id,
// doc_version), escaped like the rest.
TEST_F(KbCliText, TitlesAndSourcesFromTheServerAreEscaped) {
    const auto r = ask(false);
    EXPECT_TRUE(exited_with(r, 0, {"references read (1, from knowledge server",
                                   "  #0 \\e[31mAmber\\nreferences read (0):\\u{202E}txt.exe  (file\\e]0;owned\\x07.txt)  [doc notes\\e[1m.md v4]\n"}));
    EXPECT_FALSE(has_raw_controls(r.output)) << r.output;
}

TEST_F(KbCliText, TheServersErrorTextIsEscaped) {
    const auto r = ask(true);
    // The chunk goes without memories (exit 0); the warning and the summary quote the server.
    EXPECT_TRUE(exited_with(r, 0, {"RetrieveMemories failed: UNAVAILABLE: \\e[2J\\nmnemo: all good"}));
    EXPECT_FALSE(has_raw_controls(r.output)) << r.output;
    EXPECT_EQ(r.output.find("\nmnemo: all good"), std::string::npos) << "the server forged a line: " << r.output;
}

}  // namespace
