// `mnemo-kb serve --shard I/N --shard-peer URL ...` as an operator runs it (docs/kb-protocol.md,
// "Shards"): two processes over one bank folder, asking each other with a shard-scope token read
// from a file, answer every query as an unsharded in-process node does; a node whose peer stops
// answers UNAVAILABLE naming the shard; the options given wrongly are usage errors (exit 2).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "fixtures/kb_shard_cluster.hpp"
#include "fixtures/tls_certificates.hpp"
#include "process_util.hpp"

extern char** environ;

namespace fs = std::filesystem;
using namespace mnemo::kb;
using namespace mnemo::kb::shard_test;
using mnemo::testing::exited_with;
using mnemo::testing::run_program;
using mnemo::testing::shell_quote;

namespace {

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// `mnemo-kb ARGS...` in the background, its stderr in LOG; SIGTERM when the object goes.
class Background {
public:
    Background(std::vector<std::string> args, const fs::path& log) {
        args.insert(args.begin(), std::string(MNEMO_BUILD_BIN) + "/mnemo-kb");
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
        posix_spawn_file_actions_destroy(&actions);
    }
    ~Background() { stop(); }
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int status = 0;
        waitpid(pid_, &status, 0);
        pid_ = -1;
    }

private:
    pid_t pid_ = -1;
};

bool wait_for_file(const fs::path& p, int ms = 60000) {
    for (int waited = 0; waited < ms; waited += 50) {
        if (fs::exists(p) && !slurp(p).empty()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

class KbGrpcShardsCli : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() / ("mnemo-kb-shards-cli-" + std::to_string(::getpid()));
        fs::remove_all(root_);
        fs::create_directories(root_);
        std::mt19937 rng(5);
        static const char* words[] = {"alpha", "beta", "gamma", "delta", "river", "mountain", "city", "ocean", "forest", "paper",
                                      "engine", "memory", "stone", "cloud", "music", "garden"};
        std::ofstream corpus(root_ / "corpus.jsonl");
        for (int d = 0; d < 40; ++d) {
            corpus << "{\"id\": \"d" << d << "\", \"source\": \"" << (d % 2 ? "odd" : "even") << "\", \"text\": \"";
            for (int p = 0; p < 3; ++p) {
                for (int w = 0; w < 7 + p; ++w) corpus << (w ? " " : "") << words[rng() % 16];
                corpus << (p < 2 ? " end\\n\\n" : " end");
            }
            corpus << "\"}\n";
        }
        corpus.close();
        const auto built = run_program("mnemo-kb", "build " + shell_quote((root_ / "corpus.jsonl").string()) + " -m " +
                                                       shell_quote(std::string(MNEMO_TEST_DATA) + "/models/memory3-tiny-bpe") + " -o " +
                                                       shell_quote(bank()) +
                                                       " --factory OPQ4_16,Residual2x6,PQ4x5 --opq-iterations 3 --kmeans-iterations 8 --threads 1",
                                       120);
        ASSERT_EQ(built.code, 0) << built.output;
        const auto line = [](const std::string& name, const std::string& scope, const std::string& token) {
            return name + " " + scope + " sha256:" + mnemo::sha256_hex(token.data(), token.size()) + "\n";
        };
        std::ofstream(root_ / "tokens") << line("reader", "read", kReadToken) << line("node", "shard", kShardToken);
        std::ofstream(root_ / "node.token") << kShardToken << "\n";
    }
    void TearDown() override { fs::remove_all(root_); }
    std::string bank() const { return (root_ / "bank").string(); }
    std::vector<std::string> node_args(ShardSpec spec, const ReservedPort& own, const ReservedPort& peer) const {
        return {"serve", bank(), "--listen", own.listen(), "--insecure", "--tokens", (root_ / "tokens").string(), "--shard", spec.describe(),
                "--shard-peer", peer.url(), "--shard-peer-token-file", (root_ / "node.token").string(), "--port-file",
                (root_ / ("port" + std::to_string(spec.shard))).string()};
    }

    fs::path root_;
};

TEST_F(KbGrpcShardsCli, TwoProcessesAnswerAsOneUnshardedNode) {
    ReservedPort p0, p1;
    Background n0(node_args({0, 2}, p0, p1), root_ / "n0.log");
    Background n1(node_args({1, 2}, p1, p0), root_ / "n1.log");
    ASSERT_TRUE(wait_for_file(root_ / "port0") && wait_for_file(root_ / "port1")) << slurp(root_ / "n0.log") << slurp(root_ / "n1.log");
    p0.release();
    p1.release();
    EXPECT_NE(slurp(root_ / "n0.log").find("shard 0/2, asking 1 peer node(s)"), std::string::npos) << slurp(root_ / "n0.log");
    Node plain(bank(), {}, {});
    auto stub0 = v1::KnowledgeBase::NewStub(grpc::CreateChannel(p0.listen(), grpc::InsecureChannelCredentials()));
    auto stub1 = v1::KnowledgeBase::NewStub(grpc::CreateChannel(p1.listen(), grpc::InsecureChannelCredentials()));
    const std::shared_ptr<const Bank> whole = plain.bank;
    // Each node's channel to its peer connects on its own, so both are asked until they answer
    // before anything is compared (CI, once: node 0 answered, node 1 was still in its backoff).
    v1::RetrieveRequest probe;
    probe.add_tokens(whole->reference(0).tokens.front());
    probe.set_k(1);
    for (auto* stub : {stub0.get(), stub1.get()}) {
        const grpc::Status s = wait_until_ready(*stub, probe);
        ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << slurp(root_ / "n0.log") << slurp(root_ / "n1.log");
    }
    size_t compared = 0;
    for (uint32_t id = 0; id < whole->count(); id += 2) {
        v1::RetrieveRequest q;
        const float* v = whole->vector(id);
        q.mutable_vector()->Add(v, v + whole->model().spec.retrieval_dim);
        for (int32_t t : whole->reference(id).tokens) q.add_tokens(t);
        q.set_k(1 + id % 40);
        if (id % 3 == 0) q.mutable_filter()->add_sources("odd");
        v1::RetrieveReply want, got;
        ASSERT_TRUE(plain.stub->Retrieve(ctx(kReadToken).get(), q, &want).ok());
        auto& stub = id % 4 == 0 ? stub0 : stub1;
        const grpc::Status s = stub->Retrieve(ctx(kReadToken).get(), q, &got);
        ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << slurp(root_ / "n0.log") << slurp(root_ / "n1.log");
        EXPECT_EQ(want.SerializeAsString(), got.SerializeAsString()) << "query of record " << id;
        ++compared;
    }
    EXPECT_GT(compared, 50u);
    // Shard 1's node stops: node 0 answers UNAVAILABLE naming shard 1, at once.
    n1.stop();
    v1::RetrieveRequest q;
    q.add_tokens(whole->reference(0).tokens.front());
    q.set_k(3);
    v1::RetrieveReply r;
    const grpc::Status s = stub0->Retrieve(ctx(kReadToken, 5000).get(), q, &r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_NE(s.error_message().find("shard 1/2"), std::string::npos) << s.error_message();
    EXPECT_EQ(s.error_message().find(std::to_string(p1.port())), std::string::npos) << "the peer's address is for the log only: " << s.error_message();
}

// TLS between the nodes, as between a client and a node: a peer's certificate is checked against
// --shard-peer-ca, and a node without the right CA gets no answer (UNAVAILABLE naming the shard).
TEST_F(KbGrpcShardsCli, NodesAskEachOtherOverTls) {
    if (!mnemo::test::have_openssl()) GTEST_SKIP() << "the openssl command is needed to make test certificates";
    const fs::path certs = root_ / "certs";
    fs::create_directories(certs);
    ASSERT_TRUE(mnemo::test::make_certificates(certs)) << slurp(certs / "log.txt");
    ReservedPort p0, p1;
    const auto tls_args = [&](ShardSpec spec, const ReservedPort& own, const ReservedPort& peer, bool with_ca) {
        std::vector<std::string> a = node_args(spec, own, peer);
        a.erase(std::find(a.begin(), a.end(), "--insecure"));
        const std::string url = "grpcs://" + peer.listen();
        *std::find(a.begin(), a.end(), peer.url()) = url;
        a.insert(a.end(), {"--tls-cert", (certs / "server.pem").string(), "--tls-key", (certs / "server.key").string()});
        if (with_ca) {
            a.push_back("--shard-peer-ca");
            a.push_back((certs / "ca.pem").string());
        }
        return a;
    };
    Background n0(tls_args({0, 2}, p0, p1, true), root_ / "n0.log");
    Background n1(tls_args({1, 2}, p1, p0, false), root_ / "n1.log");  // trusts the system's roots only
    ASSERT_TRUE(wait_for_file(root_ / "port0") && wait_for_file(root_ / "port1")) << slurp(root_ / "n0.log") << slurp(root_ / "n1.log");
    p0.release();
    p1.release();
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = slurp(certs / "ca.pem");
    const auto stub = [&](const ReservedPort& p) { return v1::KnowledgeBase::NewStub(grpc::CreateChannel(p.listen(), grpc::SslCredentials(ssl))); };
    auto stub0 = stub(p0), stub1 = stub(p1);
    Node plain(bank(), {}, {});
    v1::RetrieveRequest q;
    for (int32_t t : plain.bank->reference(1).tokens) q.add_tokens(t);
    q.set_k(8);
    v1::RetrieveReply want, got;
    ASSERT_TRUE(plain.stub->Retrieve(ctx(kReadToken).get(), q, &want).ok());
    grpc::Status s;
    for (int attempt = 0; attempt < 100; ++attempt) {
        s = stub0->Retrieve(ctx(kReadToken).get(), q, &got);
        if (s.ok()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << slurp(root_ / "n0.log");
    EXPECT_EQ(want.SerializeAsString(), got.SerializeAsString());
    // n1 may have tried its peer before n0 listened (a loaded machine): its channel then reports
    // that refused connection until gRPC's reconnect backoff tries again, so ask until the log
    // gives the handshake as the reason (every answer meanwhile is UNAVAILABLE naming the shard).
    for (int attempt = 0; attempt < 100; ++attempt) {
        s = stub1->Retrieve(ctx(kReadToken).get(), q, &got);
        EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
        EXPECT_NE(s.error_message().find("shard 0/2"), std::string::npos) << s.error_message();
        if (slurp(root_ / "n1.log").find("andshake") != std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    n1.stop();
    EXPECT_NE(slurp(root_ / "n1.log").find("andshake"), std::string::npos) << "the log says why: " << slurp(root_ / "n1.log");
}

TEST_F(KbGrpcShardsCli, ShardOptionsGivenWronglyAreUsageErrors) {
    const std::string serve = "serve " + shell_quote(bank()) + " --listen 127.0.0.1:0 --insecure --no-auth ";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--shard 0/3 --shard-peer grpc://127.0.0.1:1", "needs 2 --shard-peer"},
        {"--shard 2/2 --shard-peer grpc://127.0.0.1:1", "expected I/N"},
        {"--shard one --shard-peer grpc://127.0.0.1:1", "expected I/N"},
        {"--shard-peer grpc://127.0.0.1:1", "need --shard I/N"},
        {"--shard 0/1 --shard-peer grpc://127.0.0.1:1", "no peers"},
    };
    for (const auto& [args, needle] : cases) EXPECT_TRUE(exited_with(run_program("mnemo-kb", serve + args, 30), 2, {needle})) << args;
    // A plaintext peer off this machine: an error naming the flag (its token would travel in the clear).
    EXPECT_TRUE(exited_with(run_program("mnemo-kb", serve + "--shard 0/2 --shard-peer grpc://10.9.8.7:7443", 30), 1, {"loopback address only"}));
}

}  // namespace
