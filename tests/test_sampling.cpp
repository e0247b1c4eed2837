// Sampler and StopMatcher: exact behaviour for greedy/penalty/stop strings, and frequency checks
// against hand-computed distributions for top-p, min-p and temperature (fixed seeds, so the
// checks are deterministic; tolerances are ~6 standard deviations).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "mnemo/error.hpp"
#include "mnemo/session/sampling.hpp"

using mnemo::Sampler;
using mnemo::SamplingParams;
using mnemo::StopMatcher;

namespace {

SamplingParams plain(float temperature) {
    SamplingParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    return p;
}

// Logits whose softmax is exactly these probabilities.
std::vector<float> logits_for(const std::vector<double>& probs) {
    std::vector<float> l;
    for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
    return l;
}

std::vector<double> frequencies(Sampler& s, const std::vector<float>& logits, int draws) {
    std::vector<double> f(logits.size(), 0.0);
    const std::vector<int32_t> none;
    for (int i = 0; i < draws; ++i) {
        const int32_t id = s.sample(logits.data(), static_cast<int32_t>(logits.size()), none);
        EXPECT_GE(id, 0);
        EXPECT_LT(id, static_cast<int32_t>(logits.size()));
        f[static_cast<size_t>(id)] += 1.0;
    }
    for (double& x : f) x /= draws;
    return f;
}

const std::vector<double> kProbs = {0.5, 0.3, 0.15, 0.05};
constexpr int kDraws = 20000;

// The expected frequency of one token: within `tolerance` of `p` (exactly p when 0).
struct Freq {
    size_t token;
    double p;
    double tolerance = 0.0;
};

// Draws `draws` tokens from kProbs with the sampler p sets up and checks each listed frequency.
void expect_frequencies(const SamplingParams& p, const std::vector<Freq>& want, int draws = kDraws) {
    Sampler s(p);
    const std::vector<double> f = frequencies(s, logits_for(kProbs), draws);
    for (const Freq& w : want) {
        if (w.tolerance == 0.0)
            EXPECT_EQ(f[w.token], w.p) << "token " << w.token;
        else
            EXPECT_NEAR(f[w.token], w.p, w.tolerance) << "token " << w.token;
    }
}

}  // namespace

TEST(Sampling, GreedyPicksArgmaxAndLowestIdOnTies) {
    Sampler s(plain(0.0f));
    const std::vector<float> logits = {0.1f, 3.0f, -2.0f, 3.0f, 1.0f};
    EXPECT_EQ(s.sample(logits.data(), 5, {}), 1);
    const std::vector<float> neg = {-5.0f, -1.0f, -0.5f};
    EXPECT_EQ(s.sample(neg.data(), 3, {}), 2);
}

TEST(Sampling, SameSeedSameSequenceOtherSeedDiffers) {
    SamplingParams p = plain(1.0f);
    p.seed = 1234;
    Sampler a(p), b(p);
    p.seed = 4321;
    Sampler c(p);
    std::vector<float> logits(50);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 7) * 0.1f;
    std::vector<int32_t> sa, sb, sc;
    for (int i = 0; i < 200; ++i) {
        sa.push_back(a.sample(logits.data(), 50, {}));
        sb.push_back(b.sample(logits.data(), 50, {}));
        sc.push_back(c.sample(logits.data(), 50, {}));
    }
    EXPECT_EQ(sa, sb);
    EXPECT_NE(sa, sc);
}

TEST(Sampling, TopKOneEqualsGreedy) {
    std::mt19937 gen(7);
    std::normal_distribution<float> nd(0.0f, 3.0f);
    SamplingParams p = plain(1.5f);
    p.top_k = 1;
    Sampler topk(p);
    Sampler greedy(plain(0.0f));
    for (int trial = 0; trial < 100; ++trial) {
        std::vector<float> logits(300);
        for (float& x : logits) x = nd(gen);
        EXPECT_EQ(topk.sample(logits.data(), 300, {}), greedy.sample(logits.data(), 300, {}));
    }
}

TEST(Sampling, TopKRestrictsToTheKBest) {
    SamplingParams p = plain(1.0f);
    p.top_k = 2;
    // Token 2 and 3 (probabilities 0.15, 0.05) are outside the top 2; renormalised 0.625/0.375.
    expect_frequencies(p, {{2, 0.0}, {3, 0.0}, {0, 0.625, 0.02}});
}

TEST(Sampling, TopPKeepsSmallestNucleus) {
    SamplingParams p = plain(1.0f);
    p.top_p = 0.75f;  // 0.5 < 0.75 <= 0.5 + 0.3: tokens 0 and 1
    expect_frequencies(p, {{2, 0.0}, {3, 0.0}, {0, 0.5 / 0.8, 0.02}, {1, 0.3 / 0.8, 0.02}});
}

TEST(Sampling, TopPAlwaysKeepsOne) {
    SamplingParams p = plain(1.0f);
    p.top_p = 0.0f;
    expect_frequencies(p, {{0, 1.0}}, 2000);
}

TEST(Sampling, MinPDropsTokensBelowFractionOfMax) {
    SamplingParams p = plain(1.0f);
    p.min_p = 0.25f;  // threshold 0.125: keeps 0.5, 0.3, 0.15; drops 0.05
    expect_frequencies(p, {{3, 0.0}, {0, 0.5 / 0.95, 0.02}, {1, 0.3 / 0.95, 0.02}, {2, 0.15 / 0.95, 0.02}});
}

TEST(Sampling, TemperatureSharpensDistribution) {
    // T = 0.5 squares the probabilities: 0.25, 0.09, 0.0225, 0.0025 (sum 0.365).
    expect_frequencies(plain(0.5f), {{0, 0.25 / 0.365, 0.02},
                                     {1, 0.09 / 0.365, 0.02},
                                     {2, 0.0225 / 0.365, 0.01},
                                     {3, 0.0025 / 0.365, 0.005}});
}

TEST(Sampling, TopPAndMinPComposeAfterTopK) {
    SamplingParams p = plain(1.0f);
    p.top_k = 3;      // 0.5, 0.3, 0.15 renormalised over 0.95
    p.top_p = 0.9f;   // cumulative 0.526, 0.842, 1.0: keeps all three
    p.min_p = 0.5f;   // threshold 0.25 of the max: drops 0.15 (0.3 >= 0.25 stays)
    expect_frequencies(p, {{2, 0.0}, {3, 0.0}, {0, 0.625, 0.02}});
}

TEST(Sampling, RepetitionPenaltyFlipsChoice) {
    SamplingParams p = plain(0.0f);
    p.repeat_penalty = 1.5f;
    p.repeat_last_n = 4;
    Sampler s(p);
    const std::vector<float> pos = {2.0f, 1.5f};  // 2.0 / 1.5 = 1.33 < 1.5
    EXPECT_EQ(s.sample(pos.data(), 2, {}), 0);
    EXPECT_EQ(s.sample(pos.data(), 2, {0}), 1);
    const std::vector<float> neg = {-1.0f, -1.2f};  // -1.0 * 1.5 = -1.5 < -1.2
    EXPECT_EQ(s.sample(neg.data(), 2, {}), 0);
    EXPECT_EQ(s.sample(neg.data(), 2, {0}), 1);
    // Outside the window (last 4 tokens) the penalty does not apply.
    EXPECT_EQ(s.sample(pos.data(), 2, {0, 1, 1, 1, 1}), 0);
    // A token seen many times is penalised once: 2.0 / 1.5 = 1.33 still beats 1.0.
    const std::vector<float> once = {2.0f, 1.0f};
    EXPECT_EQ(s.sample(once.data(), 2, {0, 0, 0}), 0);
    // Ids outside the vocabulary in the history are ignored, not a crash.
    EXPECT_EQ(s.sample(pos.data(), 2, {-3, 99}), 0);
}

TEST(Sampling, RejectsEmptyVocabulary) {
    Sampler s(plain(1.0f));
    EXPECT_THROW(s.sample(nullptr, 0, {}), mnemo::Error);
}

// A NaN or infinite logit means the forward pass broke (all-NaN embeddings): no token may come
// out of such a row as if it were an answer, greedy or sampled, whichever logit it is.
TEST(Sampling, NonFiniteLogitsAreAnErrorNamingTheToken) {
    const float inf = std::numeric_limits<float>::infinity();
    for (float temperature : {0.0f, 1.0f}) {
        Sampler s(plain(temperature));
        for (const auto& [logits, token] : std::vector<std::pair<std::vector<float>, int32_t>>{
                 {{std::nanf(""), 1.0f, std::nanf("")}, 0},
                 {{1.0f, 2.0f, std::nanf("")}, 2},
                 {{1.0f, inf, 0.0f}, 1},
                 {{-inf, -inf}, 0}}) {
            try {
                s.sample(logits.data(), static_cast<int32_t>(logits.size()), {});
                ADD_FAILURE() << "sampled from non-finite logits at temperature " << temperature;
            } catch (const mnemo::NonFiniteLogits& e) {
                EXPECT_EQ(e.token, token);
                EXPECT_NE(std::string(e.what()).find("weights or activations are not finite"), std::string::npos) << e.what();
            }
        }
        // Finite logits after a refusal are sampled as usual.
        const std::vector<float> fine = {0.0f, 5.0f};
        const int32_t id = s.sample(fine.data(), 2, {});
        EXPECT_TRUE(id == 0 || id == 1) << id;
        if (temperature == 0.0f) {
            EXPECT_EQ(id, 1);
        }
    }
}

TEST(StopMatcher, StopStringSpanningPushes) {
    StopMatcher m({"</s>"});
    std::string shown;
    shown += m.push("Hello <");
    EXPECT_EQ(shown, "Hello ");  // "<" could start the stop string: held back
    shown += m.push("/");
    shown += m.push("s> trailing");
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ(shown, "Hello ");
    EXPECT_EQ(m.push("more"), "");
    EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, FalseAlarmIsReleased) {
    StopMatcher m({"STOP"});
    EXPECT_EQ(m.push("ab ST"), "ab ");
    EXPECT_EQ(m.push("AR"), "STAR");
    EXPECT_FALSE(m.stopped());
    EXPECT_EQ(m.push("xSTO"), "x");
    EXPECT_EQ(m.flush(), "STO");
    EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
    StopMatcher m({"world", "lo w", ""});
    EXPECT_EQ(m.push("hello world"), "hel");
    EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, NoStopsPassesEverything) {
    StopMatcher m({});
    EXPECT_EQ(m.push("abc"), "abc");
    EXPECT_EQ(m.flush(), "");
}
