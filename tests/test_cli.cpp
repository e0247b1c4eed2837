// The `mnemo` command-line program, run as a separate process: exit codes (0 ok, 1 runtime error,
// 2 usage error), the messages users see, and end-to-end logits against golden files. Also the
// .npy writer the `logits` command uses.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "mnemo/npy.hpp"
#include "npy.hpp"

namespace fs = std::filesystem;

namespace {

struct Result {
    int code = -1;
    std::string output;  // stdout and stderr together
};

std::string mnemo_bin() { return std::string(MNEMO_BUILD_BIN) + "/mnemo"; }

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// Run `mnemo <args>` (args already shell-quoted where needed) with stdin from `stdin_file`.
Result run_mnemo(const std::string& args, const std::string& stdin_file = "/dev/null") {
    Result r;
    // coreutils timeout turns a hang into a failure (exit 124) instead of a stuck test run.
    const std::string cmd = "timeout -k 5 120 " + quote(mnemo_bin()) + " " + args + " <" + quote(stdin_file) + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

class Cli : public ::testing::Test {
protected:
    void SetUp() override {
        // Not a skip: the program is part of the build, so its absence is a build problem.
        ASSERT_TRUE(fs::exists(mnemo_bin())) << mnemo_bin() << " is missing: build the mnemo_cli target";
    }
};

std::string tiny_model() { return std::string(MNEMO_TEST_DATA) + "/models/llama-tiny-f32"; }

std::string temp_path(const std::string& name) {
    return (fs::temp_directory_path() / ("mnemo_cli_" + std::to_string(getpid()) + "_" + name)).string();
}

// golden_ids.txt: integers separated by spaces, commas or newlines.
std::vector<int64_t> read_ids(const std::string& path) {
    std::ifstream f(path);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (char& c : text) {
        if (c == ',' || c == '[' || c == ']') c = ' ';
    }
    std::istringstream in(text);
    std::vector<int64_t> ids;
    int64_t v;
    while (in >> v) ids.push_back(v);
    return ids;
}

// UTF-8 text of one code point (for the byte-level vocabulary below).
std::string utf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

// The tiny checkpoints have weights but no tokenizer. For the commands that need text, build a
// model folder next to them in /tmp: the same config and weights (linked) plus a byte-level BPE
// tokenizer.json without merges (every byte is one token: ids 3..258, below the model's vocab)
// and <unk>/<s>/</s> as 0/1/2, matching config.json's bos/eos ids.
std::string tokenized_tiny_model() {
    const fs::path dir = temp_path("tiny-with-tokenizer");
    fs::create_directories(dir);
    for (const char* f : {"config.json", "model.safetensors"}) {
        std::error_code ec;
        fs::remove(dir / f, ec);
        fs::create_symlink(fs::path(tiny_model()) / f, dir / f);
    }
    // GPT-2's byte -> printable code point table: printable Latin-1 bytes map to themselves,
    // the others to 256, 257, ... in byte order.
    std::string vocab = "{\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2";
    uint32_t extra = 256;
    for (uint32_t b = 0; b < 256; ++b) {
        const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        std::string piece = utf8(printable ? b : extra++);
        if (piece == "\"" || piece == "\\") piece = "\\" + piece;
        vocab += ", \"" + piece + "\": " + std::to_string(b + 3);
    }
    vocab += "}";
    std::ofstream(dir / "tokenizer.json")
        << "{\"version\": \"1.0\", \"added_tokens\": ["
           "{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
           "{\"id\": 1, \"content\": \"<s>\", \"special\": true},"
           "{\"id\": 2, \"content\": \"</s>\", \"special\": true}],"
           "\"normalizer\": null,"
           "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true},"
           "\"decoder\": {\"type\": \"ByteLevel\"},"
           "\"model\": {\"type\": \"BPE\", \"vocab\": "
        << vocab << ", \"merges\": []}}";
    std::ofstream(dir / "tokenizer_config.json")
        << "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_bos_token\": true}";
    return dir.string();
}

#define REQUIRE_TINY_MODEL()                                                                     \
    do {                                                                                         \
        if (!fs::is_regular_file(tiny_model() + "/config.json"))                                 \
            GTEST_SKIP() << "test model missing: " << tiny_model()                               \
                         << " (generated by tools/ from the test-model script)";                \
    } while (0)

}  // namespace

TEST_F(Cli, HelpAndVersionExitZero) {
    Result r = run_mnemo("--help");
    EXPECT_EQ(r.code, 0) << r.output;
    for (const char* cmd : {"run", "chat", "logits", "bench", "compare", "info", "devices", "plugins"}) {
        EXPECT_TRUE(contains(r.output, cmd)) << cmd << " missing from:\n" << r.output;
        Result h = run_mnemo(std::string(cmd) + " --help");
        EXPECT_EQ(h.code, 0) << cmd << ": " << h.output;
        EXPECT_TRUE(contains(h.output, "usage: mnemo " + std::string(cmd))) << h.output;
    }
    r = run_mnemo("--version");
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(contains(r.output, "mnemo ")) << r.output;
}

TEST_F(Cli, UnknownSubcommandIsUsageError) {
    Result r = run_mnemo("frobnicate");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "frobnicate")) << r.output;
    EXPECT_EQ(run_mnemo("").code, 2);
}

TEST_F(Cli, UnknownFlagNamesTheFlag) {
    Result r = run_mnemo("run --bogus");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "--bogus")) << r.output;
    EXPECT_TRUE(contains(r.output, "see mnemo run --help")) << r.output;
}

TEST_F(Cli, BadValuesNameFlagAndExpectation) {
    Result r = run_mnemo("run -p hi -n abc");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "-n expects an integer")) << r.output;
    EXPECT_TRUE(contains(r.output, "abc")) << r.output;

    r = run_mnemo("run -p");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "-p expects a value")) << r.output;

    r = run_mnemo("run -p hi --top-p 1.5");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "--top-p")) << r.output;

    r = run_mnemo("bench --batch 1,x");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "--batch")) << r.output;

    r = run_mnemo("run --greedy=yes -p hi");
    EXPECT_EQ(r.code, 2) << r.output;

    r = run_mnemo("logits --ids 1,x,3 --out /tmp/never.npy");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "'x'")) << r.output;

    r = run_mnemo("run -m /tmp");  // -p missing
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "-p/--prompt")) << r.output;
}

TEST_F(Cli, MissingModelIsRuntimeErrorWithPath) {
    Result r = run_mnemo("run -m /nonexistent/mnemo-model -p hello");
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "mnemo: error:")) << r.output;
    EXPECT_TRUE(contains(r.output, "/nonexistent/mnemo-model")) << r.output;
}

TEST_F(Cli, DevicesListsCpu) {
    Result r = run_mnemo("devices");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "cpu")) << r.output;
}

TEST_F(Cli, PluginsListsLlama) {
    Result r = run_mnemo("plugins");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "llama")) << r.output;
}

TEST_F(Cli, InfoDescribesTinyModel) {
    REQUIRE_TINY_MODEL();
    Result r = run_mnemo("info -m " + quote(tiny_model()));
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "parameters:")) << r.output;
    EXPECT_TRUE(contains(r.output, "llama")) << r.output;
}

TEST_F(Cli, LogitsMatchGolden) {
    REQUIRE_TINY_MODEL();
    const std::string ids_file = tiny_model() + "/golden_ids.txt";
    const std::string golden_file = tiny_model() + "/golden_logits.npy";
    if (!fs::exists(ids_file) || !fs::exists(golden_file)) {
        GTEST_SKIP() << "golden files missing in " << tiny_model();
    }
    const std::vector<int64_t> ids = read_ids(ids_file);
    ASSERT_FALSE(ids.empty()) << ids_file << " holds no ids";
    std::string list;
    for (int64_t id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
    const std::string out = temp_path("logits.npy");
    Result r = run_mnemo("logits -m " + quote(tiny_model()) + " --ids " + list + " --out " + quote(out));
    ASSERT_EQ(r.code, 0) << r.output;

    const auto got = mnemo::test::load_npy(out);
    const auto want = mnemo::test::load_npy(golden_file);
    fs::remove(out);
    ASSERT_EQ(got.shape.size(), 2u);
    EXPECT_EQ(got.shape[0], static_cast<int64_t>(ids.size()));
    ASSERT_EQ(got.shape, want.shape);
    const auto a = got.as_f32();
    const auto b = want.as_f32();
    ASSERT_EQ(a.size(), b.size());
    size_t bad = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double tol = 1e-4 * std::max(1.0, std::fabs(static_cast<double>(b[i])));
        if (!(std::fabs(static_cast<double>(a[i]) - b[i]) <= tol)) {
            if (bad++ < 5) ADD_FAILURE() << "logit " << i << ": got " << a[i] << ", golden " << b[i];
        }
    }
    EXPECT_EQ(bad, 0u);
}

TEST_F(Cli, LogitsRejectsIdOutsideVocabulary) {
    REQUIRE_TINY_MODEL();
    Result r = run_mnemo("logits -m " + quote(tiny_model()) + " --ids 1,999999999 --out " + quote(temp_path("x.npy")));
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "999999999")) << r.output;
    EXPECT_FALSE(fs::exists(temp_path("x.npy")));
}

TEST_F(Cli, RunGeneratesDeterministicallyAndReportsTimings) {
    REQUIRE_TINY_MODEL();
    const std::string model = tokenized_tiny_model();
    const std::string base = "run -m " + quote(model) + " -p 'Hello world' -n 6 --seed 7 --temp 0.9";
    Result a = run_mnemo(base);
    Result b = run_mnemo(base);
    ASSERT_EQ(a.code, 0) << a.output;
    EXPECT_TRUE(contains(a.output, "generation: ")) << a.output;
    EXPECT_TRUE(contains(a.output, "prompt: ")) << a.output;
    EXPECT_EQ(a.output.substr(0, a.output.find("prompt: ")), b.output.substr(0, b.output.find("prompt: ")));
}

TEST_F(Cli, PromptLongerThanContextIsClearError) {
    REQUIRE_TINY_MODEL();
    std::string prompt;
    for (int i = 0; i < 40; ++i) prompt += "hello world ";
    Result r = run_mnemo("run -m " + quote(tokenized_tiny_model()) + " -c 8 -p " + quote(prompt));
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "prompt has 481 tokens but the context holds 8 (-c)")) << r.output;
}

TEST_F(Cli, RunStopsAtStopString) {
    REQUIRE_TINY_MODEL();
    const std::string model = tokenized_tiny_model();
    // Greedy output of the random model is some fixed text; stopping at its third byte must
    // print exactly the first two.
    Result full = run_mnemo("run -m " + quote(model) + " -p abc -n 8 --greedy");
    ASSERT_EQ(full.code, 0) << full.output;
    const std::string text = full.output.substr(0, full.output.find("prompt: "));
    ASSERT_GE(text.size(), 3u) << full.output;
    const std::string stop = text.substr(2, 1);
    if (text.find(stop) < 2) GTEST_SKIP() << "the generated text repeats its third byte earlier";
    Result cut = run_mnemo("run -m " + quote(model) + " -p abc -n 8 --greedy --stop " + quote(stop));
    ASSERT_EQ(cut.code, 0) << cut.output;
    EXPECT_EQ(cut.output.substr(0, cut.output.find("prompt: ")), text.substr(0, 2));
}

TEST_F(Cli, ChatAnswersAndQuits) {
    REQUIRE_TINY_MODEL();
    const std::string input = temp_path("chat-input.txt");
    std::ofstream(input) << "hello\n/reset\nagain\n/quit\nnever read\n";
    Result r = run_mnemo("chat -m " + quote(tokenized_tiny_model()) + " -n 4 --seed 3", input);
    fs::remove(input);
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "(conversation cleared)")) << r.output;
}

TEST(NpyWrite, RoundTripsThroughReader) {
    const std::string path = temp_path("rt.npy");
    const std::vector<float> data = {1.0f, -2.5f, 3.25f, 0.0f, 1e-7f, -1e30f};
    mnemo::write_npy_f32(path, data.data(), {2, 3});
    const auto arr = mnemo::test::load_npy(path);
    EXPECT_EQ(arr.descr, "<f4");
    EXPECT_EQ(arr.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(arr.as_f32(), data);
    // numpy aligns the data to 64 bytes: the file is header + 24 bytes of data.
    EXPECT_EQ(fs::file_size(path) % 64, 24u);
    fs::remove(path);

    mnemo::write_npy_f32(path, data.data(), {6});
    EXPECT_EQ(mnemo::test::load_npy(path).shape, (std::vector<int64_t>{6}));
    fs::remove(path);
    EXPECT_NE(mnemo::npy_f32_header({6}).find("(6,)"), std::string::npos);
}

TEST(NpyWrite, FailureNamesPathAndLeavesNothing) {
    const float x = 1.0f;
    try {
        mnemo::write_npy_f32("/nonexistent-dir/out.npy", &x, {1});
        FAIL() << "expected an error";
    } catch (const mnemo::Error& e) {
        EXPECT_TRUE(contains(e.what(), "/nonexistent-dir/out.npy")) << e.what();
    }
    EXPECT_THROW(mnemo::npy_f32_header({-1}), mnemo::Error);
}
