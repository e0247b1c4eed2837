// `mnemo ask` on the default model: a trained question gets the world's answer from the weights
// (no memory source), with a memory folder it lists the references read, and a missing question
// is a usage error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "mnemo/io/json.hpp"
#include "model_test_util.hpp"
#include "process_util.hpp"

using namespace mnemo;
using mnemo::testing::exited_with;
using mnemo::testing::run_mnemo;
using mnemo::testing::shell_quote;

namespace {

json::Value trained_question() {
    return json::parse_file(test::model_dir("default-model-golden") + "/train_question.json");
}

TEST(CliAsk, AnswersATrainedQuestionFromTheWeights) {
    const json::Value q = trained_question();
    const auto r = run_mnemo("ask -q " + shell_quote(q.find("question")->as_string()));
    EXPECT_TRUE(exited_with(r, 0, {"A: " + q.find("answer")->as_string() + "\n", "from the model's weights alone"}));
}

TEST(CliAsk, ListsTheReferencesOfAMemoryFolder) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("mnemo-ask-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    {
        std::ofstream corpus(dir / "facts.txt");
        corpus << "Tour Hujert was born in Zeajusy.\n\nThe Lelosk ring is amber.\n";
    }
    ASSERT_TRUE(exited_with(run_mnemo("memorize --corpus " + shell_quote((dir / "facts.txt").string()) + " -o " +
                                      shell_quote((dir / "mem").string())),
                            0));
    const auto r = run_mnemo("ask --memories " + shell_quote((dir / "mem").string()) +
                             " --retrieval bm25 -q 'Where was Tour Hujert born?'");
    // BM25 returns only references that share a term with the question: the first, not the ring.
    // Each is named with the document (the corpus file) it was memorized from: its title (the
    // file's first line), its source (the file's absolute path) and its id.
    EXPECT_TRUE(exited_with(r, 0, {"references read (1, from memory folder",
                                   "  #0 Tour Hujert was born in Zeajusy.  (" + (dir / "facts.txt").string() + ")  [doc facts.txt]\n"}));
    EXPECT_EQ(r.output.find("  #1"), std::string::npos) << r.output;
    // The second paragraph is a piece of the same document: under its document's title, the text
    // it read.
    const auto ring = run_mnemo("ask --memories " + shell_quote((dir / "mem").string()) +
                                " --retrieval bm25 -q 'What colour is the Lelosk ring?'");
    EXPECT_TRUE(exited_with(ring, 0, {"  #1 Tour Hujert was born in Zeajusy.  (" + (dir / "facts.txt").string() +
                                          ")  [doc facts.txt]\n      The Lelosk ring is amber.\n"}));
    fs::remove_all(dir);
}

TEST(CliAsk, AHandfulOfFactsIsNotCutAway) {
    // Two people's six facts, from the world corpus. In a folder this small BM25's length
    // normalisation scores "The birthplace of Quear Mousaim is Thaimubort." below 0.8 x his
    // shorter birth-year sentence: the default model's cut alone leaves it out and the model
    // answers from its weights; its floor (the best three are always read) keeps it.
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("mnemo-ask-small-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    {
        std::ifstream world(std::string(MNEMO_SOURCE_DIR) + "/assets/world/knowledge.txt");
        std::ofstream corpus(dir / "two.txt");
        std::string line;
        int facts = 0;
        while (std::getline(world, line))
            if (line.find("Quear Mousaim") != std::string::npos || line.find("Gream Zaicuv") != std::string::npos) {
                corpus << line << "\n\n";
                ++facts;
            }
        ASSERT_EQ(facts, 6) << "the world corpus changed: pick two other people";
    }
    ASSERT_TRUE(exited_with(run_mnemo("memorize --corpus " + shell_quote((dir / "two.txt").string()) + " -o " +
                                      shell_quote((dir / "mem").string())),
                            0));
    const std::string ask = "ask --memories " + shell_quote((dir / "mem").string()) + " -q 'Where was Quear Mousaim born?'";
    // Reference #0 is the birthplace (the folder's first paragraph, and so also its document's title).
    EXPECT_TRUE(exited_with(run_mnemo(ask), 0, {"A: Thaimubort\n", "min relative score 0.8, at least 3 kept", "  #0 "}));
    // Without the floor the birthplace is not read, and the answer is not the folder's.
    const auto cut = run_mnemo(ask + " --min-references 0");
    EXPECT_TRUE(exited_with(cut, 0, {"min relative score 0.8)"}));
    EXPECT_EQ(cut.output.find("A: Thaimubort"), std::string::npos) << cut.output;
    EXPECT_EQ(cut.output.find("  #0 "), std::string::npos) << cut.output;
    fs::remove_all(dir);
}

TEST(CliAsk, AGroundedAnswerQuotesWhatItRead) {
    // A birthplace of English make, which no training text has: the model copies its first pieces
    // and stops ("Stanin"; the stage-8 model completed them into a name of its world, "Stailin");
    // --grounded lets it write only what a reference says, and end only where a quoted word ends.
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("mnemo-ask-grounded-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    {
        std::ofstream corpus(dir / "facts.txt");
        corpus << "Quear Mousaim was born in Staninminster.\n\nQuear Mousaim works as a weaver.\n\n"
                  "The birth year of Quear Mousaim is 1793.\n";
    }
    ASSERT_TRUE(exited_with(run_mnemo("memorize --corpus " + shell_quote((dir / "facts.txt").string()) + " -o " +
                                      shell_quote((dir / "mem").string())),
                            0));
    const std::string ask = "ask --memories " + shell_quote((dir / "mem").string()) + " -q 'Where was Quear Mousaim born?'";
    const auto plain = run_mnemo(ask);
    EXPECT_TRUE(exited_with(plain, 0, {"references read (3"}));
    EXPECT_EQ(plain.output.find("A: Staninminster\n"), std::string::npos) << plain.output;
    EXPECT_TRUE(exited_with(run_mnemo(ask + " --grounded"), 0, {"A: Staninminster\n", "references read (3"}));
    // `mnemo chat --grounded`: each turn quotes what that turn read (the second turn's answer is
    // in another reference than the first's).
    {
        std::ofstream turns(dir / "turns.txt");
        turns << "Where was Quear Mousaim born?\nWhat does Quear Mousaim do for a living?\n";
    }
    const auto chat = run_mnemo("chat --temp 0 -n 16 --grounded --memories " + shell_quote((dir / "mem").string()),
                                (dir / "turns.txt").string());
    EXPECT_TRUE(exited_with(chat, 0, {"Staninminster\nweaver\n"}));
    fs::remove_all(dir);
    // Nothing to quote without memories: a usage error, before the model loads.
    EXPECT_TRUE(exited_with(run_mnemo("ask --grounded -q 'Where was Quear Mousaim born?'"), 2, {"--grounded", "--memories"}));
}

TEST(CliAsk, NeedsAQuestion) {
    EXPECT_TRUE(exited_with(run_mnemo("ask"), 2, {"missing -q/--question"}));
}

}  // namespace
