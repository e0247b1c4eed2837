// The programs as a user (or the desktop app's tests) runs them: `mnemo-kb serve BANK ... --model
// DIR` on loopback, taught a corpus by `mnemo-kb push` with an admin token, which a read token
// cannot do; the pushed document is then listed at the new version and retrieved. A server
// without --model refuses the push naming the flag, and one whose --model is not the bank's
// model does not start.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "mnemo/kb/kb_admin.hpp"
#include "mnemo/kb/kb_source.hpp"
#include "model_test_util.hpp"
#include "process_util.hpp"

extern char** environ;

namespace fs = std::filesystem;
using mnemo::testing::exited_with;
using mnemo::testing::run_program;
using mnemo::testing::shell_quote;

namespace {

std::string read_text(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// `mnemo-kb serve` as a child process, killed when the object goes.
class Serve {
public:
    Serve(std::vector<std::string> args, const fs::path& port_file) : port_file_(port_file) {
        fs::remove(port_file);
        args.insert(args.begin(), std::string(MNEMO_BUILD_BIN) + "/mnemo-kb");
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        const std::string log = port_file.string() + ".log";
        posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
        posix_spawn_file_actions_destroy(&actions);
    }
    ~Serve() { stop(); }
    // The bound port once serving; 0 when it exited (*code: its exit code) or after 60 s.
    int wait_port(int* code = nullptr) {
        for (int i = 0; i < 600 && pid_ > 0; ++i) {
            if (const std::string t = fs::exists(port_file_) ? read_text(port_file_) : ""; !t.empty()) return std::stoi(t);
            int status = 0;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                if (code) *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                return 0;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return 0;
    }
    // SIGTERM; the exit code (0 after the graceful shutdown; 128 + signal when killed by it).
    int stop() {
        if (pid_ <= 0) return -1;
        ::kill(pid_, SIGTERM);
        int status = 0;
        waitpid(pid_, &status, 0);
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::string log() const { return read_text(port_file_.string() + ".log"); }

private:
    fs::path port_file_;
    pid_t pid_ = -1;
};

class KbAddDocumentsCli : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() / ("mnemo-kb-push-" + std::to_string(::getpid()));
        fs::remove_all(root_);
        fs::create_directories(root_ / "corpus");
        static const char* words[] = {"alpha", "beta", "gamma", "delta", "river", "mountain", "city", "ocean", "forest", "paper"};
        for (int d = 0; d < 24; ++d) {
            std::ofstream out(root_ / "corpus" / ("doc" + std::to_string(d) + ".txt"));
            for (int p = 0; p < 3; ++p) {
                for (int w = 0; w < 8; ++w) out << words[(d * 7 + p * 3 + w * w) % 10] << (w < 7 ? " " : ".\n\n");
            }
        }
        fs::create_directories(root_ / "new");
        std::ofstream(root_ / "new" / "zebra.md") << "# Zebra quartet\n\nThe zebra quartet played violins under the lighthouse.\n";
        ASSERT_TRUE(exited_with(run_program("mnemo-kb", "build " + q(root_ / "corpus") + " -m " + q(model()) + " -o " + q(root_ / "bank") +
                                                            " --factory OPQ4_16,Residual2x6,PQ4x5 --opq-iterations 3 --kmeans-iterations 8"
                                                            " --threads 1 --batch 32"),
                                0, {"version 1"}));
        for (const char* scope : {"admin", "read"}) {
            const auto t = run_program("mnemo-kb", std::string("token new --name ") + scope + " --scope " + scope + " --tokens " + q(root_ / "tokens"));
            ASSERT_TRUE(exited_with(t, 0));
            const size_t at = t.output.find("mkb_");
            ASSERT_NE(at, std::string::npos) << t.output;
            std::ofstream(root_ / (std::string(scope) + ".token")) << t.output.substr(at, t.output.find('\n', at) - at) << "\n";
        }
    }
    void TearDown() override { fs::remove_all(root_); }

    static std::string q(const fs::path& p) { return shell_quote(p.string()); }
    static std::string model() { return mnemo::test::model_dir("memory3-tiny-bpe"); }
    // The flags a client test needs: loopback plaintext, the token file, the model, a port file.
    std::vector<std::string> serve_args(const std::string& model_dir) const {
        std::vector<std::string> a = {"serve", (root_ / "bank").string(), "--listen", "127.0.0.1:0", "--insecure", "--tokens",
                                      (root_ / "tokens").string(), "--port-file", (root_ / "port").string(), "--batch", "8"};
        if (!model_dir.empty()) a.insert(a.end(), {"--model", model_dir});
        return a;
    }
    std::string push(int port, const char* token) const {
        return "push grpc://127.0.0.1:" + std::to_string(port) + " " + q(root_ / "new") + " --token-file " + q(root_ / token) + " --json";
    }

    fs::path root_;
};

TEST_F(KbAddDocumentsCli, PushTeachesARunningServer) {
    Serve server(serve_args(model()), root_ / "port");
    const int port = server.wait_port();
    ASSERT_GT(port, 0) << server.log();
    EXPECT_NE(server.log().find("AddDocuments with model"), std::string::npos) << server.log();

    EXPECT_TRUE(exited_with(run_program("mnemo-kb", push(port, "read.token")), 1, {"PERMISSION_DENIED", "needs admin"}));
    EXPECT_TRUE(exited_with(run_program("mnemo-kb", push(port, "admin.token")), 0, {"\"version\":2", "\"documents\":1", "memorizing", "\"notes\":[\"the codec reconstructs"}));
    // Pushing the same file again replaces it.
    EXPECT_TRUE(exited_with(run_program("mnemo-kb", push(port, "admin.token")), 0, {"\"version\":3", "\"replaced_documents\":1"}));

    const std::string url = "grpc://127.0.0.1:" + std::to_string(port);
    const std::string read = mnemo::read_kb_token((root_ / "read.token").string());
    bool found = false;
    for (const mnemo::KbDocumentInfo& d : mnemo::kb_list_documents({url, read, "", 5000}))
        if (d.doc_id == "zebra.md") {
            found = true;
            EXPECT_EQ(d.version, 3u);
            EXPECT_EQ(d.title, "Zebra quartet");
        }
    EXPECT_TRUE(found);
    EXPECT_EQ(mnemo::kb_delete_documents({url, mnemo::read_kb_token((root_ / "admin.token").string()), "", 5000}, {"zebra.md"}), 4u);
    // The model's backend threads must not take SIGTERM's default action: the shutdown stays graceful.
    EXPECT_EQ(server.stop(), 0) << server.log();
    EXPECT_NE(server.log().find("mnemo-kb serve: stopped"), std::string::npos) << server.log();
    EXPECT_NE(server.log().find("method=AddDocuments status=OK"), std::string::npos) << server.log();
}

TEST_F(KbAddDocumentsCli, WithoutModelPushIsRefusedAndAWrongModelDoesNotStart) {
    {
        Serve server(serve_args(""), root_ / "port");
        const int port = server.wait_port();
        ASSERT_GT(port, 0) << server.log();
        EXPECT_TRUE(exited_with(run_program("mnemo-kb", push(port, "admin.token")), 1, {"FAILED_PRECONDITION", "--model"}));
    }
    Serve wrong(serve_args(mnemo::test::model_dir("memory3-tiny-f32")), root_ / "port");
    int code = -1;
    EXPECT_EQ(wrong.wait_port(&code), 0);
    EXPECT_EQ(code, 1);
    EXPECT_NE(wrong.log().find("memories only fit the model that wrote them"), std::string::npos) << wrong.log();
}

}  // namespace
