// Grounded answers (app/grounding.hpp): with a small vocabulary of known pieces, which tokens stay
// sampleable after each answer so far: only continuations of a quote of a reference, starting at a
// word, ending where a word ends, byte for byte.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "app/grounding.hpp"

using mnemo::app::AnswerGrounding;

namespace {

// A tokenizer of fixed pieces: id 0 is end-of-sequence, id 1 a special token, the rest text.
class PieceTokenizer : public mnemo::Tokenizer {
public:
    explicit PieceTokenizer(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {
        eos_id = 0;
        eos_ids = {0};
    }
    std::vector<int32_t> encode(std::string_view, bool) const override { return {}; }
    std::string token_bytes(int32_t id) const override { return pieces_[static_cast<size_t>(id)]; }
    std::string decode(const std::vector<int32_t>&, bool) const override { return {}; }
    int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
    std::optional<int32_t> token_id(std::string_view) const override { return std::nullopt; }
    bool is_special(int32_t id) const override { return id == 1; }

private:
    std::vector<std::string> pieces_;
};

const std::vector<std::string> kPieces = {"</s>", "<|im_end|>", " Fy", "qua", "ruv", " Paris", ".", "\n",
                                          " ",    "17",         "93",  "fy",  " in", "Fyquaruv"};

class AnswerGroundingTest : public ::testing::Test {
protected:
    AnswerGroundingTest() : tok(kPieces), grounding(tok, tok.vocab_size(), {"\n"}) {
        grounding.set_references({"Poshuth Rokoun was born in Fyquaruv.", "The birth year of Poshuth Rokoun is 1793."},
                                 "Where was Poshuth Rokoun born?");
    }
    // The pieces left sampleable after `answer`.
    std::set<std::string> allowed(const std::string& answer) {
        std::vector<float> logits(kPieces.size(), 0.0f);
        grounding.restrict(logits.data(), answer);
        std::set<std::string> out;
        for (size_t i = 0; i < logits.size(); ++i) {
            EXPECT_TRUE(logits[i] == 0.0f || logits[i] == AnswerGrounding::kMasked);
            if (logits[i] == 0.0f) out.insert(kPieces[i]);
        }
        return out;
    }
    PieceTokenizer tok;
    AnswerGrounding grounding;
};

TEST_F(AnswerGroundingTest, AnAnswerStartsAWordOfAReference) {
    // " Fy", "17" and " in" start words; "qua", "ruv", "93" and "." are inside one or after one;
    // " Paris" is in no reference, "fy" not with that case; a piece of spaces may open the answer
    // (SentencePiece's "▁" before digits); nothing ends an empty answer.
    EXPECT_EQ(allowed(""), (std::set<std::string>{" Fy", " ", "17", " in", "Fyquaruv"}));
    EXPECT_EQ(allowed(" "), (std::set<std::string>{" Fy", "17", " in", "Fyquaruv"}));  // once
}

TEST_F(AnswerGroundingTest, AQuoteEndsOnlyWhereItsWordEnds) {
    EXPECT_EQ(allowed(" Fyqua"), (std::set<std::string>{"ruv"}));  // "Fyqua" cannot stop short
    EXPECT_EQ(allowed(" Fyquaruv"), (std::set<std::string>{".", "</s>", "<|im_end|>", "\n"}));
    EXPECT_EQ(allowed("17"), (std::set<std::string>{"93"}));
    EXPECT_EQ(allowed("1793"), (std::set<std::string>{".", "</s>", "<|im_end|>", "\n"}));
    EXPECT_EQ(allowed(" in"), (std::set<std::string>{" Fy", " ", "</s>", "<|im_end|>", "\n"}));
}

TEST_F(AnswerGroundingTest, AnAnswerOffEveryQuoteCanOnlyEnd) {
    // Generation must always be able to stop, even after text no reference holds.
    EXPECT_EQ(allowed(" Paris"), (std::set<std::string>{"</s>", "<|im_end|>", "\n"}));
}

TEST_F(AnswerGroundingTest, AnAnswerDoesNotRepeatTheQuestion) {
    // "Who was born in Fyquaruv?" is not answered "Fyquaruv" (nor "in ..."): no quote starts at
    // one of the question's words, whole words compared byte for byte ("fy" is not "Fy...").
    grounding.set_references({"Poshuth Rokoun was born in Fyquaruv.", "The birth year of Poshuth Rokoun of Fyquaruv is 1793."},
                             "Who was born in Fyquaruv?");
    EXPECT_EQ(allowed(""), (std::set<std::string>{" ", "17"}));
    EXPECT_EQ(allowed(" Fy"), (std::set<std::string>{"</s>", "<|im_end|>", "\n"}));  // quotes nothing
    // A question word inside a quote is fine: only where the quote starts counts.
    grounding.set_references({"Poshuth Rokoun was born in Fyquaruv."}, "Where was he born?");
    EXPECT_EQ(allowed(" in"), (std::set<std::string>{" Fy", " ", "</s>", "<|im_end|>", "\n"}));
    EXPECT_EQ(allowed("Poshuth Rokoun was born in"), (std::set<std::string>{" Fy", " ", "</s>", "<|im_end|>", "\n"}));
}

TEST_F(AnswerGroundingTest, QuotesComeFromTheReferencesAboutWhatWasAsked) {
    // Two references read, one about the person asked for: only it is quoted ("17" for its 1793;
    // "Fyquaruv" and "in" are in the other). When no reference names everything the question
    // names, or the question names nothing (no capitalized word after its first), all are quoted.
    const std::vector<std::string> refs = {"Poshuth Rokoun was born in Fyquaruv.", "The birth year of Quear Mousaim is 1793."};
    grounding.set_references(refs, "When was Quear Mousaim born?");
    EXPECT_EQ(allowed(""), (std::set<std::string>{" ", "17"}));
    const std::set<std::string> all = {" Fy", " ", "17", " in", "Fyquaruv"};
    grounding.set_references(refs, "When was Quear Kewiort born?");  // no reference names both
    EXPECT_EQ(allowed(""), all);
    grounding.set_references(refs, "when was quear mousaim born?");  // names nothing
    EXPECT_EQ(allowed(""), all);
    grounding.set_references(refs, "When was Quear born?");  // "Quear" whole, not "Quearx"
    EXPECT_EQ(allowed(""), (std::set<std::string>{" ", "17"}));
}

TEST(AnswerGrounding, AQuoteDoesNotEndInsideAName) {
    // "Lower" is not an answer where the reference says "Lower Tamholm", nor "Tamholm": a capitalized
    // word, one space and another capitalized word are one name; after a lowercase word it may end.
    PieceTokenizer tok({"</s>", "<|im_end|>", " Lower", " Tam", "holm", " is", ".", " Edith"});
    AnswerGrounding g(tok, tok.vocab_size(), {});
    g.set_references({"The birthplace of Edith Thornfield is Lower Tamholm."}, "Where was Edith Thornfield born?");
    const auto allowed = [&](const std::string& answer) {
        std::vector<float> logits(8, 0.0f);
        g.restrict(logits.data(), answer);
        std::set<std::string> out;
        for (size_t i = 0; i < logits.size(); ++i)
            if (logits[i] == 0.0f) out.insert(tok.token_bytes(static_cast<int32_t>(i)));
        return out;
    };
    EXPECT_EQ(allowed(" Lower"), (std::set<std::string>{" Tam"}));
    EXPECT_EQ(allowed(" Tam"), (std::set<std::string>{"</s>", "<|im_end|>"}));  // nor does one start inside it
    EXPECT_EQ(allowed(" Lower Tamholm"), (std::set<std::string>{".", "</s>", "<|im_end|>"}));
    EXPECT_EQ(allowed(" is"), (std::set<std::string>{" Lower", "</s>", "<|im_end|>"}));
    // " Edith" repeats the question; "Tamholm" is the inside of a name.
    EXPECT_EQ(allowed(""), (std::set<std::string>{" Lower", " is"}));
    // After a full stop a capital starts a sentence: "Lower" there is a quote's start.
    g.set_references({"Edith Thornfield was born in 1794. Lower Tamholm is her town."}, "Where was Edith Thornfield born?");
    EXPECT_EQ(allowed(""), (std::set<std::string>{" Lower", " is"}));
}

TEST(AnswerGrounding, WithoutAnEndTokenAQuoteThatCannotGoOnIsOver) {
    // A completion model with no end-of-sequence token and no stop strings: restrict() says the
    // answer is over when no piece continues the quote, rather than leaving every token masked.
    class NoEnd : public PieceTokenizer {
    public:
        NoEnd() : PieceTokenizer({" are", " sparse", "\n", "x"}) {
            eos_id.reset();
            eos_ids.clear();
        }
        bool is_special(int32_t) const override { return false; }
    } tok;
    AnswerGrounding g(tok, tok.vocab_size(), {});
    g.set_references({"Explicit memories are sparse attention key-values."}, "Explicit memories");
    std::vector<float> logits(4, 0.0f);
    EXPECT_TRUE(g.restrict(logits.data(), " are"));
    EXPECT_EQ(logits, (std::vector<float>{AnswerGrounding::kMasked, 0.0f, AnswerGrounding::kMasked, AnswerGrounding::kMasked}));
    logits.assign(4, 0.0f);
    EXPECT_FALSE(g.restrict(logits.data(), " are\n"));
}

TEST_F(AnswerGroundingTest, NoReferencesMeansNoConstraint) {
    grounding.set_references({}, "Where was Poshuth Rokoun born?");
    EXPECT_FALSE(grounding.active());
    EXPECT_EQ(allowed(" Paris").size(), kPieces.size());
    grounding.set_references({"", ""}, "Where was Poshuth Rokoun born?");  // a reference without text (a server not asked for texts)
    EXPECT_FALSE(grounding.active());
}

TEST_F(AnswerGroundingTest, PiecesAreTheAnswersBytesAndEndTokensHaveNone) {
    EXPECT_EQ(grounding.piece(2), " Fy");
    EXPECT_TRUE(grounding.ends(0));
    EXPECT_TRUE(grounding.ends(1));   // special
    EXPECT_TRUE(grounding.ends(7));   // starts with a stop string
    EXPECT_FALSE(grounding.ends(6));
    EXPECT_EQ(grounding.piece(7), "");
    EXPECT_EQ(grounding.vocab(), static_cast<int32_t>(kPieces.size()));
}

}  // namespace
