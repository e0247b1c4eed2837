// The knowledge-server client against a hostile server (in the test, on 127.0.0.1): what the
// client accepts is bounded by what the session's model needs, and anything larger is refused
// with an error naming the server and the field, before it is buffered. A codebook announced as
// 1 GiB, a codebook whose header contradicts its size or the model, a reply with a record far
// larger than the model's records, and a FetchMemories stream with more records than asked.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/error_checks.hpp"
#include "fixtures/fake_bank_info.hpp"
#include "fixtures/fifo.hpp"
#include "fixtures/random_codebook.hpp"
#include "mnemo/error.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/memory/memory_record.hpp"
#include "mnemo/kb/kb_source.hpp"
#include "mnemo/memory/vq_codebook.hpp"
#include "mnemo_kb.grpc.pb.h"
#include "model_test_util.hpp"

using namespace mnemo;
namespace kbv1 = mnemo::kb::v1;
using mnemo::test::mentions;
using Clock = std::chrono::steady_clock;

namespace {

// A codebook VQ_DECODE takes for dim-dimensional vectors, as the bytes a server sends.
std::vector<uint8_t> codebook_bytes(uint32_t dim) {
    std::mt19937 rng(5);
    return test::random_codebook(dim, rng).to_bytes();
}

// What the hostile service does wrong.
enum class Fault {
    HugeCodebook,        // GetCodebook announces 1 GiB and streams 1 MiB chunks until stopped
    LyingHeader,         // total_bytes within the cap, but not what the codebook's header implies
    ForeignDimension,    // a codebook for vectors of another dimension than the model's heads
    HugeRecord,          // RetrieveMemories answers with an 8 MiB record
    ExtraFetchedRecords  // FetchMemories streams more records than asked for
};

class HostileKnowledgeBase final : public kbv1::KnowledgeBase::Service {
public:
    HostileKnowledgeBase(const MemoryFolderModel& model, Fault fault) : model_(model), fault_(fault) {
        keys_ = codebook_bytes(static_cast<uint32_t>(model.spec.head_dim));
        values_ = codebook_bytes(static_cast<uint32_t>(model.spec.value_dim));
        const std::vector<uint8_t> k = keys_, v = values_;
        codec_ = MemoryCodec{parse_vq_codebook(k.data(), k.size(), "k", ""), parse_vq_codebook(v.data(), v.size(), "v", "")};
    }

    std::atomic<int> chunks_sent{0};
    std::atomic<int> records_streamed{0};

    grpc::Status Info(grpc::ServerContext*, const kbv1::InfoRequest*, kbv1::InfoReply* reply) override {
        mnemo::test::describe_bank(reply, model_, &codec_, memory_record_bytes(model_.spec, &codec_), 4);
        return grpc::Status::OK;
    }

    grpc::Status GetCodebook(grpc::ServerContext* ctx, const kbv1::CodebookRequest* req,
                             grpc::ServerWriter<kbv1::CodebookChunk>* out) override {
        std::vector<uint8_t> bytes = req->sha256() == codec_.keys.sha256 ? keys_ : values_;
        uint64_t total = bytes.size();
        if (fault_ == Fault::HugeCodebook) {
            // Chunks of a "1 GiB codebook" until the client hangs up (at most 64 MiB: the test
            // must end even against a client that keeps reading).
            const std::string mib(1 << 20, 'x');
            for (uint64_t off = 0; off < (64u << 20) && !ctx->IsCancelled(); off += mib.size()) {
                kbv1::CodebookChunk c;
                c.set_offset(off);
                c.set_total_bytes(uint64_t{1} << 30);
                c.set_data(mib);
                if (!out->Write(c)) break;
                ++chunks_sent;
            }
            return grpc::Status::OK;
        }
        if (fault_ == Fault::LyingHeader) total += 4096;  // the client must not wait for these
        if (fault_ == Fault::ForeignDimension) {
            bytes = codebook_bytes(static_cast<uint32_t>(model_.spec.head_dim) * 2);
            total = bytes.size();
        }
        for (size_t off = 0; off < bytes.size(); off += 1000) {
            kbv1::CodebookChunk c;
            c.set_offset(off);
            c.set_total_bytes(total);
            c.set_data(std::string(bytes.begin() + static_cast<long>(off),
                                   bytes.begin() + static_cast<long>(std::min(bytes.size(), off + 1000))));
            if (!out->Write(c)) break;
            ++chunks_sent;
        }
        return grpc::Status::OK;
    }

    grpc::Status Retrieve(grpc::ServerContext*, const kbv1::RetrieveRequest*, kbv1::RetrieveReply* reply) override {
        reply->add_hits()->set_id(0);
        reply->set_bank_version(1);
        return grpc::Status::OK;
    }

    grpc::Status RetrieveMemories(grpc::ServerContext*, const kbv1::RetrieveRequest*, kbv1::RetrieveMemoriesReply* reply) override {
        reply->mutable_retrieval()->add_hits()->set_id(0);
        kbv1::MemoryRecord* r = reply->add_records();
        r->set_id(0);
        r->set_record(std::string(8 << 20, '\0'));
        return grpc::Status::OK;
    }

    // The record asked for, then (up to a million) more: small messages, so that a client which
    // reads them all takes seconds, and one which stops the call is seen to.
    grpc::Status FetchMemories(grpc::ServerContext* ctx, const kbv1::FetchRequest* req, grpc::ServerWriter<kbv1::MemoryRecord>* out) override {
        for (int i = 0; i < kExtraRecords && !ctx->IsCancelled(); ++i) {
            kbv1::MemoryRecord r;
            r.set_id(req->ids(0));
            if (i == 0) r.set_record(std::string(memory_record_bytes(model_.spec, &codec_), '\0'));
            if (!out->Write(r)) break;
            ++records_streamed;
        }
        fetch_cancelled = ctx->IsCancelled();
        fetch_done = true;
        return grpc::Status::OK;
    }
    static constexpr int kExtraRecords = 1000000;
    std::atomic<bool> fetch_cancelled{false}, fetch_done{false};

private:
    MemoryFolderModel model_;
    Fault fault_;
    std::vector<uint8_t> keys_, values_;
    MemoryCodec codec_;
};

class KbClientLimits : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        auto session = test::open_model(test::model_dir("memory3-tiny-f32"), 128);
        model_ = new MemoryFolderModel(memory_folder_model(*session));
    }
    static void TearDownTestSuite() { delete model_; }

    void serve(Fault fault) {
        service_ = std::make_unique<HostileKnowledgeBase>(*model_, fault);
        grpc::ServerBuilder b;
        int port = 0;
        b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
        b.RegisterService(service_.get());
        // The server may send what it likes; only the client's limit is under test.
        b.SetMaxSendMessageSize(64 << 20);
        server_ = b.BuildAndStart();
        ASSERT_TRUE(server_);
        url_ = "grpc://127.0.0.1:" + std::to_string(port);
    }
    void TearDown() override {
        if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    }
    KbSourceOptions options() {
        KbSourceOptions o;
        o.url = url_;
        o.prefetch = false;
        o.connect_timeout_ms = o.call_timeout_ms = 5000;
        o.warn = [this](const std::string& m) {
            std::lock_guard<std::mutex> l(mu_);
            warnings_.push_back(m);
        };
        return o;
    }
    std::string connect_error() {
        return test::required_error("connecting to the hostile server", [&] { connect_kb(options(), *model_); });
    }

    static inline MemoryFolderModel* model_ = nullptr;
    std::unique_ptr<HostileKnowledgeBase> service_;
    std::unique_ptr<grpc::Server> server_;
    std::string url_;
    std::mutex mu_;
    std::vector<std::string> warnings_;
};

}  // namespace

TEST_F(KbClientLimits, CodebookLargerThanTheModelCanUseIsRefusedBeforeItIsBuffered) {
    serve(Fault::HugeCodebook);
    const auto t0 = Clock::now();
    const std::string e = connect_error();
    EXPECT_MENTIONS(e, "knowledge server " + url_);
    EXPECT_MENTIONS(e, "total_bytes is 1073741824, more than the " +
                           std::to_string(vq_codebook_max_bytes(static_cast<uint32_t>(model_->spec.head_dim))) + " bytes");
    EXPECT_MENTIONS(e, std::to_string(model_->spec.head_dim) + "-dimensional keys");
    // Refused at the first chunk: the client cancels the call instead of reading 1 GiB (or even
    // the 64 MiB this server sends at most).
    EXPECT_LT(service_->chunks_sent.load(), 16);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 4.0);
}

TEST_F(KbClientLimits, CodebookWhoseHeaderDisagreesWithTotalBytesIsRefused) {
    serve(Fault::LyingHeader);
    const std::string e = connect_error();
    EXPECT_MENTIONS(e, "knowledge server " + url_ + ": GetCodebook");
    EXPECT_MENTIONS(e, "the codebook's header implies");
}

TEST_F(KbClientLimits, CodebookForOtherVectorsIsRefusedByItsHeader) {
    serve(Fault::ForeignDimension);
    const std::string e = connect_error();
    EXPECT_MENTIONS(e, "knowledge server " + url_ + ": GetCodebook");
    EXPECT_MENTIONS(e, "header: d_in is " + std::to_string(2 * model_->spec.head_dim) + ", this model's keys have " +
                           std::to_string(model_->spec.head_dim));
}

TEST_F(KbClientLimits, ReplyLargerThanTheModelsRecordsIsRefused) {
    serve(Fault::HugeRecord);
    const auto kb = connect_kb(options(), *model_);
    std::vector<float> vec(static_cast<size_t>(model_->spec.retrieval_dim), 0.1f);
    std::vector<int32_t> toks = {5, 6, 7};
    ChunkQuery q;
    q.vector = &vec;
    q.tokens = &toks;
    q.seq = 0;
    EXPECT_TRUE(kb->retrieve(q, model_->spec.references_per_chunk).empty()) << "the chunk gets no memories";
    const KbSourceStatus st = kb->status();
    EXPECT_EQ(st.failures, 1u);
    // gRPC refused the 8 MiB message under the limit the model sets; the error says so.
    EXPECT_MENTIONS(st.last_error, "knowledge server " + url_ + ": RetrieveMemories failed: RESOURCE_EXHAUSTED");
    EXPECT_MENTIONS(st.last_error, "the client takes reply messages of at most");
    EXPECT_EQ(st.record_bytes, 0u);
}

TEST_F(KbClientLimits, FetchStreamWithMoreRecordsThanAskedIsCutOff) {
    serve(Fault::ExtraFetchedRecords);
    KbSourceOptions o = options();
    o.single_round_trip = false;  // Retrieve, then FetchMemories
    const auto kb = connect_kb(o, *model_);
    std::vector<float> vec(static_cast<size_t>(model_->spec.retrieval_dim), 0.1f);
    std::vector<int32_t> toks = {5, 6, 7};
    ChunkQuery q;
    q.vector = &vec;
    q.tokens = &toks;
    q.seq = 0;
    EXPECT_TRUE(kb->retrieve(q, model_->spec.references_per_chunk).empty());
    EXPECT_MENTIONS(kb->status().last_error, "knowledge server " + url_ + ": FetchMemories sent more records than the 1 asked for");
    // The client cancels the call instead of reading the stream to its end.
    for (int i = 0; i < 500 && !service_->fetch_done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(service_->fetch_done) << "the server's stream did not end within 5 s";
    EXPECT_TRUE(service_->fetch_cancelled);
    EXPECT_LT(service_->records_streamed.load(), HostileKnowledgeBase::kExtraRecords);
}

// The CA file is read whole before the channel is made: a FIFO in its place is refused at once.
TEST_F(KbClientLimits, CaFileThatIsAFifoIsRefusedWithoutBlocking) {
    const std::string ca = ::testing::TempDir() + "mnemo-kb-ca-fifo-" + std::to_string(::getpid());
    std::remove(ca.c_str());
    test::make_fifo(ca);
    KbSourceOptions o = options();
    o.url = "grpcs://127.0.0.1:1";
    o.ca_file = ca;
    const std::string e = test::error_without_blocking(ca, [&] { connect_kb(o, *model_); });
    EXPECT_MENTIONS(e, "--kb-ca: " + ca + ": is a FIFO, expected a regular file");
    std::remove(ca.c_str());
}
