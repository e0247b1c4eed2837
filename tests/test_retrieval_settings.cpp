// The relative score cut and a model folder's retrieval advice (mnemo/memory/retrieval_settings.hpp).
// That the bank and a memory folder cut alike is in test_kb_bank.cpp; that the cut reaches the
// server is in test_kb_grpc_*.cpp and test_cli_eval.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/memory/retrieval_settings.hpp"

namespace fs = std::filesystem;
using namespace mnemo;

namespace {

size_t kept(const std::vector<double>& scores, double ratio, uint32_t min_references = 0) {
    return count_near_best(scores, ratio, min_references, [](double s) { return s; });
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

class RetrievalAdviceFile : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("mnemo-advice-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    void write(const std::string& json) { std::ofstream(dir_ / "generation_config.json") << json; }
    std::string dir() const { return dir_.string(); }
    fs::path dir_;
};

}  // namespace

TEST(RelativeScoreCut, KeepsWhatScoresWithinTheRatioOfTheBest) {
    const std::vector<double> bm25 = {10.0, 9.0, 7.0, 6.99, 3.0};
    EXPECT_EQ(kept(bm25, 0.0), 5u);   // 0: no cut
    EXPECT_EQ(kept(bm25, 0.7), 3u);   // 7.0 is exactly 0.7 of 10: kept; 6.99 is not
    EXPECT_EQ(kept(bm25, 0.95), 1u);  // the best is always kept
    EXPECT_EQ(kept(bm25, 1.0), 1u);
    EXPECT_EQ(kept({}, 0.5), 0u);
    EXPECT_EQ(kept({4.0, 4.0, 4.0}, 1.0), 3u);  // ties with the best stay
}

TEST(RelativeScoreCut, NeverLeavesFewerThanTheFloor) {
    // A folder of six facts about two people: the entity's own birthplace at 0.76 of its shorter
    // sibling's BM25 score would be cut at 0.8; the floor keeps the best three whatever their scores.
    const std::vector<double> bm25 = {10.0, 9.0, 7.6, 2.0, 1.0};
    EXPECT_EQ(kept(bm25, 0.8), 2u);
    EXPECT_EQ(kept(bm25, 0.8, 3), 3u);
    EXPECT_EQ(kept(bm25, 0.8, 1), 2u);       // a floor below what the ratio keeps changes nothing
    EXPECT_EQ(kept(bm25, 0.8, 9), 5u);       // a floor above the ranking keeps it all
    EXPECT_EQ(kept({}, 0.8, 3), 0u);
    EXPECT_EQ(kept(bm25, 0.0, 3), 5u);       // no cut: no floor to hold up
    EXPECT_EQ(kept({0.0, -1.0}, 0.8, 1), 2u);  // nothing positive: nothing cut
}

TEST(RelativeScoreCut, FloorOutsideZeroToAThousandIsAnError) {
    EXPECT_NO_THROW(check_min_references(0, "x"));
    EXPECT_NO_THROW(check_min_references(kMaxMinReferences, "x"));
    for (int64_t bad : {int64_t{-1}, kMaxMinReferences + 1}) {
        const std::string e = error_of([&] { check_min_references(bad, "memory folder 'm'"); });
        EXPECT_NE(e.find("memory folder 'm': the number of references the cut always keeps must be in [0, 1000]"), std::string::npos) << e;
    }
    EXPECT_EQ(relative_cut_suffix(0.8, 3), ", min relative score 0.8, at least 3 kept");
    EXPECT_EQ(relative_cut_suffix(0, 3), "");
}

TEST(RelativeScoreCut, ANonPositiveBestCutsNothing) {
    // A cosine ranking may have nothing positive; "a fraction of the best" then orders nothing.
    EXPECT_EQ(kept({0.0, -0.2, -0.5}, 0.9), 3u);
    EXPECT_EQ(kept({-0.1, -0.2}, 0.5), 2u);
}

TEST(RelativeScoreCut, RatioOutsideZeroToOneIsAnError) {
    EXPECT_NO_THROW(check_min_relative_score(0.0, "x"));
    EXPECT_NO_THROW(check_min_relative_score(1.0, "x"));
    for (double bad : {-0.01, 1.01, static_cast<double>(NAN), static_cast<double>(INFINITY)}) {
        const std::string e = error_of([&] { check_min_relative_score(bad, "memory folder 'm'"); });
        EXPECT_NE(e.find("memory folder 'm': the minimum relative score must be in [0, 1]"), std::string::npos) << e;
    }
    EXPECT_EQ(relative_cut_suffix(0), "");
    EXPECT_EQ(relative_cut_suffix(0.7), ", min relative score 0.7");
}

TEST_F(RetrievalAdviceFile, NoFileOrNoObjectIsNoAdvice) {
    RetrievalAdvice a = recommended_retrieval(dir());
    EXPECT_EQ(a.mode, "");
    EXPECT_FALSE(a.has_min_relative_score);
    write(R"({"do_sample": false})");
    a = recommended_retrieval(dir());
    EXPECT_EQ(a.mode, "");
    EXPECT_EQ(a.min_relative_score, 0.0);
}

TEST_F(RetrievalAdviceFile, ReadsModeAndCut) {
    write(R"({"max_new_tokens": 32, "mnemo_retrieval": {"mode": "hybrid", "min_relative_score": 0.25}})");
    RetrievalAdvice a = recommended_retrieval(dir());
    EXPECT_EQ(a.mode, "hybrid");
    EXPECT_TRUE(a.has_min_relative_score);
    EXPECT_DOUBLE_EQ(a.min_relative_score, 0.25);
    EXPECT_FALSE(a.has_min_references);
    EXPECT_EQ(a.min_references, 0u);
    write(R"({"mnemo_retrieval": {"mode": "bm25", "min_relative_score": 0.8, "min_references": 3}})");
    a = recommended_retrieval(dir());
    EXPECT_TRUE(a.has_min_references);
    EXPECT_EQ(a.min_references, 3u);
}

TEST_F(RetrievalAdviceFile, MalformedAdviceNamesTheFileAndField) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"mnemo_retrieval": "bm25"})", "mnemo_retrieval must be an object"},
        {R"({"mnemo_retrieval": {"mode": "cosine"}})", "mnemo_retrieval.mode must be \"vector\", \"bm25\" or \"hybrid\""},
        {R"({"mnemo_retrieval": {"min_relative_score": "high"}})", "mnemo_retrieval.min_relative_score must be a number"},
        {R"({"mnemo_retrieval": {"min_relative_score": 1.5}})", "mnemo_retrieval.min_relative_score: the minimum relative score must be in [0, 1]"},
        {R"({"mnemo_retrieval": {"min_references": 2.5}})", "mnemo_retrieval.min_references must be a whole number in [0, 1000], got 2.5"},
        {R"({"mnemo_retrieval": {"min_references": -1}})", "mnemo_retrieval.min_references must be a whole number"},
        {R"({"mnemo_retrieval": {"min_references": "3"}})", "mnemo_retrieval.min_references must be a whole number"},
        {R"({"mnemo_retrieval": )", "generation_config.json"},
    };
    for (const auto& [json, needle] : cases) {
        write(json);
        const std::string e = error_of([&] { recommended_retrieval(dir()); });
        EXPECT_NE(e.find("generation_config.json"), std::string::npos) << json << " -> " << e;
        EXPECT_NE(e.find(needle), std::string::npos) << json << " -> " << e;
    }
}

TEST(RetrievalAdvice, TheDefaultModelRecommendsBm25WithItsCut) {
    // tools/train/export.py writes it; bench/default_model/sweep_cut.sh chose the value.
    const RetrievalAdvice a = recommended_retrieval(std::string(MNEMO_SOURCE_DIR) + "/assets/default-model");
    EXPECT_EQ(a.mode, "bm25");
    EXPECT_TRUE(a.has_min_relative_score);
    EXPECT_GT(a.min_relative_score, 0.0);
    EXPECT_LE(a.min_relative_score, 1.0);
    EXPECT_TRUE(a.has_min_references);
    EXPECT_GT(a.min_references, 0u);
}
