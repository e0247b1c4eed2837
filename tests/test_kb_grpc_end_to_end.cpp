// The knowledge server end to end, as a user runs it, all on loopback: `mnemo-kb build` makes a
// bank from a small corpus with the tiny memory3 model, `mnemo-kb token new` an access token,
// `openssl` a CA and a server certificate, and `mnemo-kb serve` serves the bank with TLS as a
// separate process. A session then generates through libmnemo's KbSource (grpcs://) and must
// produce exactly the logits of the in-process path over the same memories (`mnemo-kb
// export` of the bank, read by FolderMemorySource). Then the server is killed with SIGKILL in
// the middle of a generation and started again: generation goes on without memories, with one
// warning, and gets them back once the server answers. Last, the `mnemo` program itself runs
// with --kb.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "fixtures/kb_server_process.hpp"
#include "fixtures/tls_certificates.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/kb/kb_source.hpp"
#include "model_test_util.hpp"
#include "process_util.hpp"

extern char** environ;

namespace fs = std::filesystem;
using namespace mnemo;
using mnemo::testing::exited_with;
using mnemo::testing::run_program;
using mnemo::testing::shell_quote;

namespace {

const std::string kFactory = "OPQ4_16,Residual2x6,PQ4x5";  // quick to train (tests/test_kb_bank.cpp)

std::string model() { return test::model_dir("memory3-tiny-bpe"); }

std::string read_text(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Documents of random words, five paragraphs each.
void write_corpus(const fs::path& dir, int docs) {
    static const char* words[] = {"alpha", "beta",  "gamma", "delta", "river", "mountain", "city",  "ocean", "forest", "paper",
                                  "engine", "memory", "bank", "light", "stone", "cloud",    "music", "garden", "winter", "summer"};
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> word(0, 19), len(5, 14);
    fs::create_directories(dir);
    for (int d = 0; d < docs; ++d) {
        std::ofstream out(dir / ("doc" + std::to_string(d) + ".txt"));
        out << "Document " << d << "\n\n";
        for (int p = 0; p < 5; ++p)
            for (int w = len(rng); w > 0; --w) out << words[word(rng)] << (w > 1 ? " " : ".\n\n");
    }
}

using ServerProcess = test::KbServerProcess;

std::unique_ptr<Session> open_session() { return test::open_model(model(), 256); }

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return INFINITY;
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
    return m;
}

class KbGrpcEndToEnd : public ::testing::Test {
protected:
    void SetUp() override {
        if (!test::have_openssl()) GTEST_SKIP() << "no openssl command: the TLS certificates cannot be made";
        root_ = fs::temp_directory_path() / ("mnemo-kb-e2e-" + std::to_string(::getpid()));
        fs::remove_all(root_);
        fs::create_directories(root_);
        write_corpus(root_ / "corpus", 20);
        const auto build = run_program("mnemo-kb", "build " + shell_quote((root_ / "corpus").string()) + " -m " + shell_quote(model()) +
                                                       " -o " + shell_quote(bank()) + " --factory " + kFactory +
                                                       " --opq-iterations 3 --kmeans-iterations 8 --threads 1 --batch 32");
        ASSERT_TRUE(exited_with(build, 0, {"version 1"}));
        ASSERT_TRUE(exited_with(run_program("mnemo-kb", "export " + shell_quote(bank()) + " -o " + shell_quote(folder())), 0));
        const auto token = run_program("mnemo-kb", "token new --name e2e --scope read --tokens " + shell_quote((root_ / "tokens").string()));
        ASSERT_TRUE(exited_with(token, 0));
        // The token is the one stdout line, "mkb_..." (stderr, mixed in, says where it was added).
        const size_t at = token.output.find("mkb_");
        ASSERT_NE(at, std::string::npos) << token.output;
        token_ = token.output.substr(at, token.output.find('\n', at) - at);
        std::ofstream(root_ / "token.txt") << token_ << "\n";
        ASSERT_TRUE(test::make_certificates(root_)) << read_text(root_ / "log.txt");
    }
    void TearDown() override { fs::remove_all(root_); }

    std::string bank() const { return (root_ / "bank").string(); }
    std::string folder() const { return (root_ / "folder").string(); }
    std::vector<std::string> serve_args(int port) const {
        return {"serve", bank(), "--listen", "127.0.0.1:" + std::to_string(port), "--tls-cert", (root_ / "server.pem").string(),
                "--tls-key", (root_ / "server.key").string(), "--tokens", (root_ / "tokens").string(),
                "--port-file", (root_ / "port").string()};
    }
    KbSourceOptions client(int port, std::vector<std::string>* warnings) const {
        KbSourceOptions o;
        o.url = "grpcs://127.0.0.1:" + std::to_string(port);
        o.token = token_;
        o.ca_file = (root_ / "ca.pem").string();
        o.call_timeout_ms = 3000;
        o.backoff_initial_ms = 50;
        o.backoff_max_ms = 200;
        o.warn = [warnings](const std::string& w) { warnings->push_back(w); };
        return o;
    }

    fs::path root_;
    std::string token_;
};

// Prompt of 40 tokens (chunks of 16: two complete ones retrieve), then 40 decoded tokens (two
// more chunks complete). Every position's logits, prompt and decode alike.
std::vector<float> generate(Session& s, const std::vector<int32_t>& ctx, int32_t prompt,
                            const std::function<void(int32_t)>& before_step = nullptr) {
    s.reset_all();
    std::vector<float> out = s.append(0, std::vector<int32_t>(ctx.begin(), ctx.begin() + prompt), /*all_logits=*/true);
    for (int32_t t = prompt; t < static_cast<int32_t>(ctx.size()); ++t) {
        if (before_step) before_step(t);
        const auto& l = s.decode({{ctx[static_cast<size_t>(t)], t, 0, true}});
        out.insert(out.end(), l.begin(), l.begin() + s.vocab_size());
    }
    return out;
}

TEST_F(KbGrpcEndToEnd, TlsServerGivesTheLogitsOfTheLocalFolderAndSurvivesARestart) {
    ServerProcess server(serve_args(0), root_ / "port");
    const int port = server.wait_port();
    ASSERT_GT(port, 0) << server.log();

    auto s = open_session();
    const MemoryFolderModel model = memory_folder_model(*s);
    std::mt19937 rng(5);
    std::uniform_int_distribution<int32_t> tok(3, s->vocab_size() - 1);
    std::vector<int32_t> ctx(80);
    for (int32_t& t : ctx) t = tok(rng);

    s->set_memory_source(nullptr);
    const std::vector<float> none = generate(*s, ctx, 40);
    s->set_memory_source(std::make_shared<FolderMemorySource>(folder(), model, RetrievalMode::Vector));
    const std::vector<float> local = generate(*s, ctx, 40);
    ASSERT_GT(max_abs_diff(local, none), 1e-3) << "the memories must change the logits, or this test proves nothing";

    std::vector<std::string> warnings;
    auto kb = connect_kb(client(port, &warnings), model);
    s->set_memory_source(kb);
    const std::vector<float> through_server = generate(*s, ctx, 40);
    EXPECT_LE(max_abs_diff(through_server, local), 1e-6) << "the same memories through the server";
    KbSourceStatus st = kb->status();
    EXPECT_EQ(st.state, KbSourceState::Connected);
    EXPECT_GE(st.retrievals, 4u);
    EXPECT_GT(st.records_fetched, 0u);
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    EXPECT_FALSE(kb->last_references(0).empty());
    EXPECT_FALSE(kb->last_references(0).front().text.empty()) << "the GUI shows what was recalled";

    // SIGKILL in the middle of a generation, started again two steps later on the same port.
    const uint64_t fetched_before = kb->status().records_fetched;
    std::unique_ptr<ServerProcess> again;
    int restarted_port = 0;
    const std::vector<float> across_restart = generate(*s, ctx, 40, [&](int32_t t) {
        if (t == 44) server.kill9();
        if (t == 60) {
            again = std::make_unique<ServerProcess>(serve_args(port), root_ / "port");
            restarted_port = again->wait_port();
        }
        if (t > 60 && kb->status().state != KbSourceState::Connected)
            std::this_thread::sleep_for(std::chrono::milliseconds(60));  // let the backoff (<= 200 ms) pass
    });
    ASSERT_EQ(restarted_port, port) << (again ? again->log() : "");
    EXPECT_EQ(across_restart.size(), through_server.size()) << "generation went on through the outage";
    for (float x : across_restart) ASSERT_TRUE(std::isfinite(x));
    st = kb->status();
    EXPECT_GE(st.outages, 1u);
    EXPECT_GE(st.failures + st.skipped, 1u) << "chunks during the outage got no memories";
    ASSERT_FALSE(warnings.empty()) << "one visible warning";
    EXPECT_NE(warnings.front().find("127.0.0.1:" + std::to_string(port)), std::string::npos) << warnings.front();

    // Back: the next generation reads memories again and matches the local path.
    const std::vector<float> after = generate(*s, ctx, 40);
    EXPECT_EQ(kb->status().state, KbSourceState::Connected) << kb->status().last_error;
    EXPECT_LE(max_abs_diff(after, local), 1e-6) << "memories are back after the restart";
    EXPECT_GE(kb->status().records_fetched, fetched_before);
}

TEST_F(KbGrpcEndToEnd, MnemoRunWithKbAndItsErrors) {
    ServerProcess server(serve_args(0), root_ / "port");
    const int port = server.wait_port();
    ASSERT_GT(port, 0) << server.log();
    const std::string url = "grpcs://127.0.0.1:" + std::to_string(port);
    const std::string common = "run -m " + shell_quote(model()) + " -p 'memory river bank' -n 40 --temp 0 --kb " + url;
    const std::string ca = " --kb-ca " + shell_quote((root_ / "ca.pem").string());
    const std::string token = " --kb-token-file " + shell_quote((root_ / "token.txt").string());

    EXPECT_TRUE(exited_with(run_program("mnemo", common + token + ca, 60), 0, {"kb"}));
    // `mnemo eval --kb` names, per item, the bank's records its generation read, with their titles
    // and documents.
    std::ofstream(root_ / "qa.jsonl") << "{\"question\": \"memory river bank\", \"answer\": \"stone\"}\n"
                                      << "{\"prompt\": \"alpha beta gamma delta river\", \"completion\": \"ocean\"}\n";
    const std::string items = (root_ / "items.jsonl").string(), report = (root_ / "report.json").string();
    EXPECT_TRUE(exited_with(run_program("mnemo", "eval -m " + shell_quote(model()) + " --questions " + shell_quote((root_ / "qa.jsonl").string()) +
                                                     " --kb " + url + token + ca + " --retrieval hybrid --items " + shell_quote(items) +
                                                     " --report " + shell_quote(report), 60),
                            0, {"all"}));
    const json::Value rep = json::parse_file(report);
    EXPECT_EQ(rep.find("memory_source")->find("kind")->as_string(), "kb");
    EXPECT_EQ(rep.find("memory_source")->find("location")->as_string(), url);
    EXPECT_EQ(rep.find("retrieval")->as_string(), "hybrid");
    std::ifstream item_lines(items);
    int n_items = 0;
    for (std::string line; std::getline(item_lines, line); ++n_items) {
        const json::Value item = json::parse(line, items);
        ASSERT_GT(item.find("references")->size(), 0u) << line;
        for (const json::Value& ref : item.find("references")->as_array()) {
            const json::Value* title = ref.find("title");
            EXPECT_TRUE(title != nullptr && !title->as_string().empty()) << line;
            // ... and the document each is a piece of, with the bank version that added it.
            const json::Value* doc_id = ref.find("doc_id");
            EXPECT_TRUE(doc_id != nullptr && !doc_id->as_string().empty()) << line;
            const json::Value* doc_version = ref.find("doc_version");
            EXPECT_TRUE(doc_version != nullptr && doc_version->as_int() == 1) << line;
        }
    }
    EXPECT_EQ(n_items, 2);
    // Without the CA the server's certificate is not trusted; without a token the server refuses.
    EXPECT_TRUE(exited_with(run_program("mnemo", common + token, 60), 1, {url}));
    std::ofstream(root_ / "wrong.txt") << "mkb_not-a-token\n";
    EXPECT_TRUE(exited_with(run_program("mnemo", common + ca + " --kb-token-file " + shell_quote((root_ / "wrong.txt").string()), 60), 1,
                            {"UNAUTHENTICATED"}));
    // Plaintext to a TLS server fails clearly, and plaintext to a remote host is refused outright.
    EXPECT_TRUE(exited_with(run_program("mnemo", "run -m " + shell_quote(model()) + " -p x -n 2 --kb grpc://127.0.0.1:" +
                                                      std::to_string(port) + token, 60),
                            1, {"grpc://127.0.0.1"}));
    EXPECT_TRUE(exited_with(run_program("mnemo", "run -m " + shell_quote(model()) + " -p x -n 2 --kb grpc://192.0.2.1:7443" + token, 60),
                            1, {"loopback"}));
}

}  // namespace
