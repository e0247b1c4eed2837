// `mnemo perplexity` as a user runs it, on the tiny memory3 model that has a tokenizer: its
// perplexity is what the model's own logits give (recomputed here through the session API), a
// model against its own base file gives KL 0 and full top-1 agreement, its q8_0 GGUF a small
// positive KL equal to the one computed from both models' logits; the statistics match the Python
// reference's golden (tools/reference/perplexity_ref.py); hostile base files and bad input are
// refused naming the file and field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "../app/cli/eval/logit_base_file.hpp"
#include "../app/cli/eval/perplexity_stats.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "model_test_util.hpp"
#include "npy.hpp"
#include "process_util.hpp"

namespace fs = std::filesystem;
using mnemo::testing::exited_with;
using mnemo::testing::run_mnemo;
using mnemo::testing::shell_quote;

namespace {

constexpr int32_t kCtx = 32;
constexpr int32_t kChunks = 4;
const std::string kText = std::string(MNEMO_SOURCE_DIR) + "/assets/corpus/rivers.txt";

class CliPerplexity : public ::testing::Test {
protected:
    void SetUp() override {
        model_ = mnemo::test::model_dir("memory3-tiny-bpe");
        if (!fs::is_regular_file(model_ + "/tokenizer.json")) GTEST_SKIP() << "test model missing: " << model_;
        dir_ = fs::temp_directory_path() / ("mnemo_cli_ppl_" + std::to_string(getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override {
        if (!dir_.empty()) fs::remove_all(dir_);
    }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    // An f32 KV cache, as the session API opens one by default: the logits recomputed below are then
    // the command's to float rounding (the program's default f16 cache moves them by ~1e-4).
    std::string ppl_args(const std::string& model, const std::string& rest = "") const {
        return "perplexity -m " + shell_quote(model) + " -f " + shell_quote(kText) + " -c " + std::to_string(kCtx) +
               " --chunks " + std::to_string(kChunks) + " -t 2 --cache-type f32 " + rest;
    }
    // The JSON object `mnemo perplexity --json` prints on stdout (stderr is mixed in: its last line).
    mnemo::json::Value run_json(const std::string& model, const std::string& rest = "") {
        const auto r = run_mnemo(ppl_args(model, "--json " + rest));
        EXPECT_EQ(r.code, 0) << r.output;
        const size_t at = r.output.find("{\"model\"");
        if (at == std::string::npos) {
            ADD_FAILURE() << "no JSON in: " << r.output;
            return {};
        }
        return mnemo::json::parse(r.output.substr(at, r.output.find('\n', at) - at), "perplexity --json");
    }
    static double num(const mnemo::json::Value& v, const char* dotted) {
        const mnemo::json::Value* x = v.find_path(dotted);
        EXPECT_NE(x, nullptr) << dotted << " missing in " << v.dump();
        return x ? x->as_double() : NAN;
    }

    // The chunks as the command builds them, and every position's log-softmax from a session.
    std::vector<std::vector<int32_t>> chunks() const {
        const auto tok = mnemo::load_tokenizer(model_);
        std::vector<int32_t> ids;
        if (tok->add_bos && tok->bos_id) ids.push_back(*tok->bos_id);
        std::ifstream in(kText);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (int32_t id : tok->encode(text, false)) ids.push_back(id);
        std::vector<std::vector<int32_t>> out;
        for (int32_t c = 0; c < kChunks; ++c) {
            out.emplace_back(ids.begin() + c * kCtx, ids.begin() + (c + 1) * kCtx);
            if (tok->add_bos && tok->bos_id) out.back()[0] = *tok->bos_id;
        }
        return out;
    }
    // Log-probabilities [chunk][position][token] in double, straight from the logits.
    std::vector<std::vector<std::vector<double>>> logprobs(const std::string& model) const {
        const auto session = mnemo::test::open_model(model, kCtx);
        std::vector<std::vector<std::vector<double>>> out;
        for (const auto& ids : chunks()) {
            session->reset(0);
            const std::vector<float> logits = session->append(0, ids, true);
            const size_t vocab = logits.size() / ids.size();
            auto& rows = out.emplace_back();
            for (size_t j = 0; j < ids.size(); ++j) {
                double mx = -INFINITY, sum = 0;
                for (size_t v = 0; v < vocab; ++v) mx = std::max(mx, double{logits[j * vocab + v]});
                for (size_t v = 0; v < vocab; ++v) sum += std::exp(logits[j * vocab + v] - mx);
                auto& row = rows.emplace_back(vocab);
                for (size_t v = 0; v < vocab; ++v) row[v] = logits[j * vocab + v] - mx - std::log(sum);
            }
        }
        return out;
    }
    std::string quantized(const std::string& type) {
        const std::string out = path("model-" + type + ".gguf");
        const auto r = run_mnemo("quantize " + shell_quote(model_) + " " + shell_quote(out) + " --type " + type + " --threads 2");
        EXPECT_EQ(r.code, 0) << r.output;
        return out;
    }

    std::string model_;
    fs::path dir_;
};

std::string read_bytes(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write_bytes(const std::string& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

}  // namespace

TEST_F(CliPerplexity, PerplexityIsTheSecondHalvesNllOfTheModelsLogits) {
    const auto lp = logprobs(model_);
    const auto ids = chunks();
    double sum = 0;
    int n = 0;
    for (int32_t c = 0; c < kChunks; ++c)
        for (int32_t j = kCtx / 2; j < kCtx - 1; ++j, ++n) sum -= lp[c][j][ids[c][j + 1]];
    const double want = std::exp(sum / n);
    const auto got = run_json(model_);
    EXPECT_EQ(num(got, "tokens_scored"), n);
    EXPECT_EQ(num(got, "chunks"), kChunks);
    EXPECT_NEAR(num(got, "ppl"), want, 1e-5 * want);
    EXPECT_GT(num(got, "ppl_error"), 0.0);
    // The text form reports the same number, llama.cpp's way, with the running values on stderr.
    const auto r = run_mnemo(ppl_args(model_));
    EXPECT_TRUE(exited_with(r, 0, {"Final estimate: PPL = ", "[1]", "[4]"}));
}

TEST_F(CliPerplexity, AModelAgainstItsOwnBaseHasNoDivergence) {
    const std::string base = path("base.klb");
    const auto saved = run_json(model_, "--save-base " + shell_quote(base));
    ASSERT_TRUE(fs::is_regular_file(base));
    const auto h = mnemo::cli::LogitBaseReader(base).header();
    EXPECT_EQ(h.n_ctx, static_cast<uint32_t>(kCtx));
    EXPECT_EQ(h.n_chunks, static_cast<uint32_t>(kChunks));
    EXPECT_EQ(fs::file_size(base), h.file_bytes());
    const auto self = run_json(model_, "--kl-base " + shell_quote(base));
    EXPECT_NEAR(num(self, "ppl"), num(saved, "ppl"), 1e-9 * num(saved, "ppl"));
    EXPECT_LT(num(self, "kl.mean"), 1e-6);
    EXPECT_LT(num(self, "kl.max"), 1e-5);
    EXPECT_EQ(num(self, "kl.same_top_pct"), 100.0);
    EXPECT_LT(num(self, "kl.rms_dp_pct"), 0.01);
    EXPECT_NEAR(num(self, "kl.base_ppl"), num(saved, "ppl"), 1e-3 * num(saved, "ppl"));
}

TEST_F(CliPerplexity, Q8ZeroAgainstTheF32BaseHasTheSmallKlOfTheirLogits) {
    const std::string base = path("base.klb");
    run_json(model_, "--save-base " + shell_quote(base));
    const std::string q8 = quantized("q8_0");
    const auto got = run_json(q8, "--kl-base " + shell_quote(base));
    // The same statistics from both models' logits, without the base file's 16-bit rows.
    const auto lb = logprobs(model_), lq = logprobs(q8);
    std::vector<double> kls;
    int same = 0;
    for (int32_t c = 0; c < kChunks; ++c)
        for (int32_t j = kCtx / 2; j < kCtx - 1; ++j) {
            double kl = 0;
            for (size_t v = 0; v < lb[c][j].size(); ++v) kl += std::exp(lb[c][j][v]) * (lb[c][j][v] - lq[c][j][v]);
            kls.push_back(kl);
            const auto top = [](const std::vector<double>& r) { return std::max_element(r.begin(), r.end()) - r.begin(); };
            same += top(lb[c][j]) == top(lq[c][j]);
        }
    double mean = 0;
    for (double k : kls) mean += k / static_cast<double>(kls.size());
    EXPECT_GT(num(got, "kl.mean"), 0.0);
    EXPECT_LT(num(got, "kl.mean"), 0.05);  // q8_0 of a random model: about 1e-3
    EXPECT_NEAR(num(got, "kl.mean"), mean, 0.01 * mean + 1e-7);
    EXPECT_NEAR(num(got, "kl.max"), *std::max_element(kls.begin(), kls.end()), 0.01 * mean + 1e-7);
    // One position at most may flip on the base rows' rounding.
    EXPECT_NEAR(num(got, "kl.same_top_pct"), 100.0 * same / static_cast<double>(kls.size()), 100.0 / kls.size() + 1e-9);
    EXPECT_GT(num(got, "kl.same_top_pct"), 50.0);
}

TEST_F(CliPerplexity, StatisticsMatchThePythonReference) {
    // tests/data/perplexity: /usr/bin/python3 tools/reference/perplexity_ref.py --make-golden tests/data/perplexity
    const std::string g = std::string(MNEMO_TEST_DATA) + "/perplexity/";
    const auto base = mnemo::test::load_npy(g + "logits_base.npy"), model = mnemo::test::load_npy(g + "logits_model.npy");
    const std::vector<int32_t> ids = mnemo::test::read_ids(g + "ids.txt");
    const auto want = mnemo::json::parse_file(g + "expected.json");
    const int32_t n_ctx = static_cast<int32_t>(num(want, "n_ctx"));
    const auto vocab = static_cast<int32_t>(base.shape.at(1));
    const std::vector<float> b = base.as_f32(), m = model.as_f32();
    // Once with the exact base rows, once through the base file's 16-bit rows.
    for (const bool stored : {false, true}) {
        SCOPED_TRACE(stored ? "base rows as stored" : "exact base rows");
        mnemo::cli::PerplexityStats ppl;
        mnemo::cli::KlStats kl;
        std::vector<double> lm, lb;
        for (size_t c = 0; c * n_ctx < ids.size(); ++c)
            for (int32_t j = n_ctx / 2; j < n_ctx - 1; ++j) {
                const size_t row = c * n_ctx + j;
                const int32_t next = ids[row + 1];
                mnemo::cli::log_softmax(m.data() + row * vocab, vocab, lm);
                mnemo::cli::log_softmax(b.data() + row * vocab, vocab, lb);
                if (stored) {
                    const std::string bytes = mnemo::cli::encode_logit_base_row(lb);
                    mnemo::cli::decode_logit_base_row(reinterpret_cast<const uint8_t*>(bytes.data()), vocab, row, "row", lb);
                }
                ppl.add(-lm[next]);
                kl.add(lb, lm, next);
            }
        const double tol = stored ? 1e-4 : 1e-9;  // relative
        EXPECT_EQ(ppl.count(), static_cast<uint64_t>(num(want, "tokens_scored")));
        EXPECT_NEAR(ppl.ppl(), num(want, "ppl"), tol * num(want, "ppl"));
        EXPECT_NEAR(ppl.ppl_error(), num(want, "ppl_error"), tol * num(want, "ppl_error"));
        const mnemo::cli::KlSummary s = kl.summary();
        const std::pair<const char*, double> fields[] = {
            {"kl.mean", s.mean}, {"kl.mean_error", s.mean_error}, {"kl.median", s.median}, {"kl.p99", s.p99},
            {"kl.max", s.max}, {"kl.rms_dp_pct", s.rms_dp_pct}, {"kl.rms_dp_error_pct", s.rms_dp_error_pct},
            {"kl.base_ppl", s.base_ppl}};
        for (const auto& [name, value] : fields) EXPECT_NEAR(value, num(want, name), 10 * tol * num(want, name)) << name;
        EXPECT_DOUBLE_EQ(s.same_top_pct, num(want, "kl.same_top_pct"));
        EXPECT_DOUBLE_EQ(s.same_top_error_pct, num(want, "kl.same_top_error_pct"));
    }
}

TEST_F(CliPerplexity, HostileBaseFilesAreRefusedNamingTheFieldAndNoBaseIsLeftByAFailedSave) {
    const std::string base = path("base.klb");
    run_json(model_, "--save-base " + shell_quote(base));
    const std::string good = read_bytes(base);
    ASSERT_GT(good.size(), mnemo::cli::LogitBaseHeader::kBytes);
    auto refused = [&](const std::string& name, const std::string& bytes, const std::vector<std::string>& mentions) {
        SCOPED_TRACE(name);
        const std::string p = path(name);
        write_bytes(p, bytes);
        std::vector<std::string> all = mentions;
        all.push_back(p);
        EXPECT_TRUE(exited_with(run_mnemo(ppl_args(model_, "--kl-base " + shell_quote(p))), 1, all));
    };
    auto with_u32 = [&](size_t offset, uint32_t v) {
        std::string s = good;
        std::memcpy(s.data() + offset, &v, 4);
        return s;
    };
    refused("empty.klb", "", {"truncated header"});
    refused("short_header.klb", good.substr(0, 20), {"truncated header"});
    refused("truncated.klb", good.substr(0, good.size() - 1), {"file size", "truncated"});
    refused("longer.klb", good + "x", {"file size"});
    refused("magic.klb", "GGUF" + good.substr(4), {"'magic'"});
    refused("version.klb", with_u32(8, 2), {"'version' is 2"});
    refused("vocab.klb", with_u32(12, 0xffffffffu), {"'vocab'"});
    refused("chunks.klb", with_u32(24, 0xffffffffu), {"'n_chunks'"});
    refused("chunks_tokens.klb", with_u32(24, kChunks + 1), {"'n_tokens' is 128"});
    std::string more_chunks = with_u32(24, kChunks + 1);  // consistent counts, but the rows are not there
    const uint64_t tokens = uint64_t{kChunks + 1} * kCtx;
    std::memcpy(more_chunks.data() + 32, &tokens, 8);
    refused("chunks_size.klb", more_chunks, {"file size", "truncated"});
    refused("first.klb", with_u32(20, 3), {"'rows_per_chunk'"});
    std::string nan_row = good;
    const float nan = NAN;
    std::memcpy(nan_row.data() + mnemo::cli::LogitBaseHeader::kBytes, &nan, 4);
    refused("nan_row.klb", nan_row, {"row 0", "'lp_min'"});
    // A base of another context, another chunk count or another text: named, not compared.
    const std::string other = path("other_ctx.klb");
    ASSERT_EQ(run_mnemo("perplexity -m " + shell_quote(model_) + " -f " + shell_quote(kText) + " -c 16 --chunks 4 --save-base " +
                        shell_quote(other)).code, 0);
    EXPECT_TRUE(exited_with(run_mnemo(ppl_args(model_, "--kl-base " + shell_quote(other))), 1, {"n_ctx 16", "this run has 32"}));
    EXPECT_TRUE(exited_with(run_mnemo("perplexity -m " + shell_quote(model_) + " -f " + shell_quote(kText) + " -c 32 --chunks 3 --kl-base " +
                                      shell_quote(base)), 1, {"n_chunks 4", "this run has 3"}));
    const std::string text2 = path("other.txt");
    std::ofstream(text2) << read_bytes(kText).substr(7);
    EXPECT_TRUE(exited_with(run_mnemo("perplexity -m " + shell_quote(model_) + " -f " + shell_quote(text2) + " -c 32 --chunks 4 --kl-base " +
                                      shell_quote(base)), 1, {"tokens_hash"}));
    EXPECT_TRUE(exited_with(run_mnemo(ppl_args(model_, "--kl-base " + shell_quote(path("missing.klb")))), 1, {"missing.klb"}));
    EXPECT_TRUE(exited_with(run_mnemo(ppl_args(model_, "--kl-base " + shell_quote(dir_.string()))), 1, {dir_.string()}));
    // A save that fails (the model cannot score the text) leaves no base file behind.
    const std::string unsaved = path("unsaved.klb");
    EXPECT_EQ(run_mnemo("perplexity -m " + shell_quote(model_) + " -f " + shell_quote(kText) + " -c 4096 --save-base " +
                        shell_quote(unsaved)).code, 1);
    EXPECT_FALSE(fs::exists(unsaved));
}

TEST_F(CliPerplexity, BadInputIsAClearError) {
    const std::string empty = path("empty.txt"), shortt = path("short.txt");
    std::ofstream(empty).flush();
    std::ofstream(shortt) << "A river.";
    auto ppl = [&](const std::string& rest) { return run_mnemo("perplexity -m " + shell_quote(model_) + " " + rest); };
    EXPECT_TRUE(exited_with(ppl("-f " + shell_quote(empty)), 1, {empty, "is empty"}));
    EXPECT_TRUE(exited_with(ppl("-f " + shell_quote(shortt) + " -c 32"), 1, {shortt, "tokens; -c 32 needs at least 32"}));
    EXPECT_TRUE(exited_with(ppl("-f " + shell_quote(kText) + " -c 2"), 2, {"-c 2 is too small"}));
    EXPECT_TRUE(exited_with(ppl("-c 32"), 2, {"missing -f TEXT"}));
    EXPECT_TRUE(exited_with(ppl("-f " + shell_quote(path("nope.txt"))), 1, {"nope.txt"}));
    EXPECT_TRUE(exited_with(ppl("-f " + shell_quote(kText) + " --save-base a --kl-base b"), 2, {"exclude each other"}));
    const auto help = run_mnemo("perplexity --help");
    EXPECT_TRUE(exited_with(help, 0, {"mnemo perplexity", "--kl-base", "--save-base"}));
}
