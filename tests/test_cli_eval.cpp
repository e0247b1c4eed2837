// `mnemo eval` as a user runs it, on the tiny memory3 model that has a tokenizer
// (tests/data/models/memory3-tiny-bpe; no chat template, so questions are asked as
// "Question: ...\nAnswer:"). The expected answers are what `mnemo run --greedy` generates for
// the same prompts, read first, so a wrong prompt, BOS, stop rule or score shows as a count that
// differs; wrong answers sit beside them so a scorer that accepts everything fails too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mnemo/io/json.hpp"
#include "model_test_util.hpp"
#include "process_util.hpp"

namespace fs = std::filesystem;
using mnemo::testing::exited_with;
using mnemo::testing::run_mnemo;
using mnemo::testing::shell_quote;

namespace {

// The stdout of `mnemo ARGS` alone (run_mnemo mixes in stderr, where timings go).
std::string stdout_of_mnemo(const std::string& args, const std::string& stdin_file = "/dev/null") {
    const std::string cmd = "timeout -k 5 120 " + shell_quote(std::string(MNEMO_BUILD_BIN) + "/mnemo") + " " + args +
                            " <" + shell_quote(stdin_file) + " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return {};
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    EXPECT_EQ(status, 0) << cmd;
    return out;
}

std::vector<mnemo::json::Value> read_jsonl(const std::string& path) {
    std::ifstream in(path);
    std::vector<mnemo::json::Value> out;
    std::string line;
    while (std::getline(in, line)) out.push_back(mnemo::json::parse(line, path));
    return out;
}

// True when the text still says something once whitespace and . ! ? are gone (the rule
// eval uses to refuse an answer that would match anything).
bool has_content(const std::string& s) { return s.find_first_not_of(" \t\r\n.!?") != std::string::npos; }

std::string upper(std::string s) {
    for (char& c : s)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return s;
}

int64_t count_of(const mnemo::json::Value& v, const char* key) { return v.find(key)->as_int(); }

class EvalCli : public ::testing::Test {
protected:
    void SetUp() override {
        model_ = mnemo::test::model_dir("memory3-tiny-bpe");
        if (!fs::is_regular_file(model_ + "/tokenizer.json")) GTEST_SKIP() << "test model missing: " << model_;
        tmp_ = fs::temp_directory_path() / ("mnemo-evalcli-" + std::to_string(::getpid()));
        fs::remove_all(tmp_);
        fs::create_directories(tmp_);
    }
    void TearDown() override { fs::remove_all(tmp_); }

    std::string path(const std::string& name) const { return (tmp_ / name).string(); }
    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(path(name)) << text;
        return path(name);
    }
    // What `mnemo run --greedy` generates for a prompt (extra: memory flags).
    std::string run_greedy(const std::string& prompt, int n, const std::string& extra = "") const {
        return stdout_of_mnemo("run -m " + shell_quote(model_) + " -p " + shell_quote(prompt) + " -n " + std::to_string(n) +
                               " --greedy " + extra);
    }

    std::string model_;
    fs::path tmp_;
};

const char* kPrompt = "The hippocampus turns short-term memories into";
const char* kQuestion = "What does a library keep?";

TEST_F(EvalCli, ScoresWhatRunGeneratesAndWritesReports) {
    const std::string completion = run_greedy(kPrompt, 8);
    ASSERT_TRUE(has_content(completion)) << "the tiny model's completion is blank: '" << completion << "'";
    // A question's answer ends at its first newline.
    const std::string full = run_greedy(std::string("Question: ") + kQuestion + "\nAnswer:", 8);
    const std::string answer = full.substr(0, full.find('\n'));
    ASSERT_TRUE(has_content(answer)) << "the tiny model's answer is blank: '" << full << "'";

    using mnemo::json::quote;
    const std::string questions = write(
        "questions.jsonl",
        "{\"id\": \"hit\", \"prompt\": " + quote(kPrompt) + ", \"completion\": " + quote(completion) + "}\n" +
            "{\"id\": \"miss\", \"set\": \"other\", \"prompt\": " + quote(kPrompt) +
            ", \"completion\": \"zzzz qqqq never generated\"}\n" +
            "\n" +  // blank lines are skipped
            "{\"set\": \"qa\", \"question\": " + quote(kQuestion) + ", \"answer\": " + quote(answer) + "}\n" +
            // Accepted through an alternative, after normalization (case, trailing period).
            "{\"id\": 7, \"set\": \"qa\", \"question\": " + quote(kQuestion) +
            ", \"answer\": \"not this\", \"answers\": [\"nor this\", " + quote(upper(answer) + " .") + "]}\n");
    const std::string report = path("report.json"), items = path("items.jsonl");
    auto r = run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(questions) +
                       " --max-tokens 8 --report " + shell_quote(report) + " --items " + shell_quote(items));
    ASSERT_TRUE(exited_with(r, 0, {"item 4/4", "exact %", "all"}));

    const mnemo::json::Value rep = mnemo::json::parse_file(report);
    EXPECT_EQ(count_of(rep, "items"), 4);
    EXPECT_EQ(count_of(rep, "exact"), 3) << rep.dump();
    EXPECT_EQ(count_of(rep, "contains"), 3) << rep.dump();
    EXPECT_DOUBLE_EQ(rep.find("exact_match")->as_double(), 0.75);
    EXPECT_EQ(rep.find("memory_source")->find("kind")->as_string(), "none");
    EXPECT_TRUE(rep.find("retrieval")->is_null());
    EXPECT_EQ(rep.find("prompt_format")->as_string(), "plain");
    const mnemo::json::Value& sets = *rep.find("per_set");
    ASSERT_EQ(sets.size(), 3u) << sets.dump();
    EXPECT_EQ(count_of(*sets.find("default"), "exact"), 1);
    EXPECT_EQ(count_of(*sets.find("other"), "exact"), 0);
    EXPECT_EQ(count_of(*sets.find("qa"), "exact"), 2);
    EXPECT_EQ(count_of(*sets.find("qa"), "items"), 2);
    EXPECT_GT(count_of(rep, "generated_tokens"), 0);
    EXPECT_GT(rep.find("tokens_per_second")->as_double(), 0.0);

    const auto lines = read_jsonl(items);
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines[0].find("id")->as_string(), "hit");
    EXPECT_EQ(lines[0].find("output")->as_string(), completion) << "eval generates what `mnemo run` generates";
    EXPECT_TRUE(lines[0].find("exact")->as_bool());
    EXPECT_EQ(lines[1].find("id")->as_string(), "miss");
    EXPECT_FALSE(lines[1].find("exact")->as_bool());
    EXPECT_FALSE(lines[1].find("contains")->as_bool());
    EXPECT_EQ(lines[2].find("id")->as_string(), "4") << "an item without id is named by its line";
    EXPECT_EQ(lines[2].find("output")->as_string(), answer);
    EXPECT_EQ(lines[2].find("question")->as_string(), kQuestion);
    EXPECT_TRUE(lines[2].find("exact")->as_bool());
    EXPECT_EQ(lines[3].find("id")->as_string(), "7");
    EXPECT_EQ(lines[3].find("expected")->size(), 3u);
    EXPECT_TRUE(lines[3].find("exact")->as_bool());
    for (const auto& line : lines) EXPECT_EQ(line.find("references")->size(), 0u) << "no memory source";

    // --limit keeps the first items; the table alone is written without --report.
    r = run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(questions) +
                  " --max-tokens 8 --limit 2 --quiet");
    ASSERT_TRUE(exited_with(r, 0, {"default", "other"}));
    EXPECT_EQ(r.output.find("item 1/"), std::string::npos) << "--quiet prints no progress";
    EXPECT_EQ(r.output.find("qa"), std::string::npos) << r.output;
}

TEST_F(EvalCli, BadLineIsAnErrorNamingTheLineAndWritesNoReport) {
    const std::string good = "{\"prompt\": \"a b c\", \"completion\": \"d\"}\n";
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"{\"prompt\": \"a b c\", \"completion\": \"d\"\n", {"line 2", "not valid JSON"}},
        {"[1, 2]\n", {"line 2", "expected a JSON object"}},
        {"{\"question\": \"why?\"}\n", {"line 2", "\"answer\""}},
        {"{\"question\": 5, \"answer\": \"x\"}\n", {"line 2", "field \"question\"", "a number"}},
        {"{\"question\": \"q\", \"prompt\": \"p\", \"answer\": \"x\"}\n", {"line 2", "both"}},
        {"{\"prompt\": \"p\", \"answer\": \"x\"}\n", {"line 2", "\"completion\""}},
        {"{\"question\": \"q\", \"answer\": \" . \"}\n", {"line 2", "empty once normalized"}},
        {"{\"question\": \"q\", \"answers\": [\"x\", 3]}\n", {"line 2", "\"answers\"[1]"}},
        {"{\"id\": \"1\", \"question\": \"q\", \"answer\": \"x\"}\n", {"line 2", "\"id\"", "earlier item"}},
        {"{\"question\": \"q\", \"answer\": \"x\", \"set\": [\"s\"]}\n", {"line 2", "field \"set\""}},
        {"{\"prompt\": \"p\", \"completion\": \"x\", \"history\": []}\n", {"line 2", "\"history\" belongs with \"question\""}},
        {"{\"question\": \"q\", \"answer\": \"x\", \"history\": {}}\n", {"line 2", "field \"history\"", "an array"}},
        {"{\"question\": \"q\", \"answer\": \"x\", \"history\": [{\"question\": \"a\"}]}\n", {"line 2", "\"history\"[0]"}},
        // The tiny model has no chat template: a conversation cannot be put to it as a chat would.
        {"{\"question\": \"q\", \"answer\": \"x\", \"history\": [{\"question\": \"a\", \"answer\": \"b\"}]}\n",
         {"line 2", "\"history\" needs a model with a chat template"}},
    };
    const std::string report = path("report.json"), items = path("items.jsonl");
    for (const auto& [bad, parts] : cases) {
        const std::string file = write("bad.jsonl", good + bad);
        std::vector<std::string> mentions = parts;
        mentions.push_back(file);
        EXPECT_TRUE(exited_with(run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(file) +
                                          " --report " + shell_quote(report) + " --items " + shell_quote(items)),
                                1, mentions))
            << bad;
    }
    EXPECT_TRUE(exited_with(run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(write("empty.jsonl", "\n"))),
                            1, {"no items"}));
    EXPECT_TRUE(exited_with(run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(path("absent.jsonl"))),
                            1, {"absent.jsonl"}));
    EXPECT_TRUE(exited_with(run_mnemo("eval -m " + shell_quote(model_)), 2, {"--questions"}));
    // A report that cannot be written is found before the model runs.
    EXPECT_TRUE(exited_with(run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(write("ok.jsonl", good)) +
                                      " --report " + shell_quote(path("no/such/folder/report.json"))),
                            1, {"--report", "does not exist"}));
    // Nothing was left behind: no report, no items, no temporary files.
    for (const auto& e : fs::directory_iterator(tmp_)) EXPECT_EQ(e.path().extension(), ".jsonl") << e.path();
}

TEST_F(EvalCli, MemoryFolderItemsMatchRunAndNameTheMemoriesRead) {
    const std::string corpus = write("corpus.txt",
                                     "The hippocampus turns short-term memories into long-term ones.\n\n"
                                     "Explicit memories are sparse attention key-values of reference texts.\n\n"
                                     "A library keeps books; a model keeps parameters; a knowledge base keeps memories.\n");
    const std::string folder = path("memories");
    ASSERT_TRUE(exited_with(run_mnemo("memorize -m " + shell_quote(model_) + " --corpus " + shell_quote(corpus) + " -o " +
                                      shell_quote(folder)),
                            0));
    size_t n_references = 0;
    {
        std::ifstream in(folder + "/references.jsonl");
        std::string line;
        while (std::getline(in, line)) ++n_references;
    }
    ASSERT_GT(n_references, 0u);

    for (const char* mode : {"vector", "bm25"}) {
        const std::string flags = "--memories " + shell_quote(folder) + " --retrieval " + mode;
        const std::string completion = run_greedy(kPrompt, 8, flags);
        ASSERT_TRUE(has_content(completion)) << mode << ": '" << completion << "'";
        using mnemo::json::quote;
        // The same item twice: the second starts from a fresh sequence, so it matches a fresh run too.
        const std::string item = "{\"prompt\": " + quote(kPrompt) + ", \"completion\": " + quote(completion) + "}\n";
        const std::string questions = write("memory.jsonl", item + item);
        const std::string report = path("report.json"), items = path("items.jsonl");
        auto r = run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(questions) + " " + flags +
                           " --max-tokens 8 --report " + shell_quote(report) + " --items " + shell_quote(items));
        ASSERT_TRUE(exited_with(r, 0, {"memory folder"})) << mode;

        const mnemo::json::Value rep = mnemo::json::parse_file(report);
        EXPECT_EQ(count_of(rep, "exact"), 2) << mode << ": " << rep.dump();
        EXPECT_EQ(rep.find("memory_source")->find("kind")->as_string(), "folder");
        EXPECT_EQ(rep.find("memory_source")->find("location")->as_string(), folder);
        EXPECT_EQ(rep.find("retrieval")->as_string(), mode);
        const auto lines = read_jsonl(items);
        ASSERT_EQ(lines.size(), 2u);
        for (const auto& line : lines) {
            const auto& refs = line.find("references")->as_array();
            EXPECT_FALSE(refs.empty()) << mode << ": " << line.dump();
            for (const auto& ref : refs) EXPECT_LT(ref.find("id")->as_int(), static_cast<int64_t>(n_references));
        }
        EXPECT_EQ(lines[0].find("references")->dump(), lines[1].find("references")->dump())
            << "the same prompt reads the same memories";
        // This model's folder gives no retrieval advice: no cut unless asked.
        EXPECT_EQ(rep.find("min_relative_score")->as_double(), 0.0);
        if (std::string(mode) != "bm25") continue;
        // --min-relative-score 1: only references as good as the best are read, so fewer than
        // without the cut (the three paragraphs share few words), and the report says so.
        const size_t uncut = lines[0].find("references")->as_array().size();
        r = run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(questions) + " " + flags +
                      " --min-relative-score 1 --max-tokens 8 --report " + shell_quote(report) + " --items " + shell_quote(items));
        ASSERT_TRUE(exited_with(r, 0, {"min relative score 1"}));
        EXPECT_EQ(mnemo::json::parse_file(report).find("min_relative_score")->as_double(), 1.0);
        const size_t cut = read_jsonl(items)[0].find("references")->as_array().size();
        EXPECT_GE(cut, 1u);
        EXPECT_LT(cut, uncut);
        EXPECT_EQ(mnemo::json::parse_file(report).find("min_references")->as_int(), 0);
        // --min-references: the cut never leaves fewer than the best N (the uncut list's first ones).
        r = run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(questions) + " " + flags +
                      " --min-relative-score 1 --min-references " + std::to_string(uncut) + " --max-tokens 8 --report " +
                      shell_quote(report) + " --items " + shell_quote(items));
        ASSERT_TRUE(exited_with(r, 0, {"at least " + std::to_string(uncut) + " kept"}));
        EXPECT_EQ(mnemo::json::parse_file(report).find("min_references")->as_int(), static_cast<int64_t>(uncut));
        EXPECT_EQ(read_jsonl(items)[0].find("references")->dump(), lines[0].find("references")->dump());
        // --grounded: each output is a quote of what its item read (the folder's paragraphs are
        // pieces of the corpus), where this model's own completion is not; the report says so.
        r = run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(questions) + " " + flags +
                      " --grounded --max-tokens 8 --report " + shell_quote(report) + " --items " + shell_quote(items));
        ASSERT_TRUE(exited_with(r, 0, {"memory folder"}));
        EXPECT_TRUE(mnemo::json::parse_file(report).find("grounded")->as_bool());
        std::ostringstream corpus_text;
        corpus_text << std::ifstream(corpus).rdbuf();
        const std::string text = corpus_text.str();
        EXPECT_EQ(text.find(completion), std::string::npos) << "the ungrounded completion '" << completion << "' is a quote";
        for (const auto& line : read_jsonl(items)) {
            std::string out = line.find("output")->as_string();
            out.erase(0, out.find_first_not_of(" \n"));
            EXPECT_FALSE(out.empty()) << line.dump();
            EXPECT_NE(text.find(out), std::string::npos) << "'" << out << "' quotes nothing of the corpus";
        }
        EXPECT_TRUE(exited_with(run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(questions) +
                                          " --grounded"),
                                2, {"--grounded", "--memories"}));
        r = run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(questions) + " " + flags +
                      " --min-references 1001");
        EXPECT_TRUE(exited_with(r, 2, {"--min-references"}));
        r = run_mnemo("eval -m " + shell_quote(model_) + " --questions " + shell_quote(questions) + " " + flags +
                      " --min-relative-score 1.5");
        EXPECT_TRUE(exited_with(r, 2, {"--min-relative-score"}));
    }
}

}  // namespace

// A follow-up question is scored as `mnemo chat` answers it: the default model's greedy chat of
// two questions, then an item whose history is the first exchange. The chat's second answer must
// score, another must not; and the conversation reuses its cache (no re-fed turn is reported).
TEST(EvalCliConversation, AFollowUpIsAnsweredAsTheChatAnswersIt) {
    const fs::path tmp = fs::temp_directory_path() / ("mnemo-evalchat-" + std::to_string(::getpid()));
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    const std::string q1 = "Where was Quear Mousaim born?", q2 = "What colour is the Dreachioth telescope?";
    const std::string typed = (tmp / "typed.txt").string();
    std::ofstream(typed) << q1 << "\n" << q2 << "\n";
    const std::string out = stdout_of_mnemo("chat --temp 0 -n 12", typed);
    std::istringstream lines(out);
    std::string a1, a2;
    std::getline(lines, a1);
    std::getline(lines, a2);
    ASSERT_TRUE(has_content(a1) && has_content(a2)) << out;
    auto item = [&](const std::string& id, const std::string& answer) {
        return "{\"id\": \"" + id + "\", \"question\": " + mnemo::json::quote(q2) + ", \"answer\": " + mnemo::json::quote(answer) +
               ", \"history\": [{\"question\": " + mnemo::json::quote(q1) + ", \"answer\": " + mnemo::json::quote(a1) + "}]}\n";
    };
    const std::string file = (tmp / "follow_up.jsonl").string();
    std::ofstream(file) << item("chat", a2) << item("other", a2 + " and " + upper(a2) + "x");
    const std::string report = (tmp / "items.jsonl").string();
    const mnemo::testing::ProcessResult r = run_mnemo("eval --questions " + shell_quote(file) + " --items " + shell_quote(report));
    EXPECT_TRUE(exited_with(r, 0, {}));
    EXPECT_EQ(r.output.find("re-fed the whole conversation"), std::string::npos) << r.output;
    const std::vector<mnemo::json::Value> items = read_jsonl(report);
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0].find("output")->as_string(), a2);
    EXPECT_TRUE(items[0].find("exact")->as_bool());
    EXPECT_FALSE(items[1].find("exact")->as_bool());
    // Without memories, how the history is fed changes nothing the model reads: the same tokens
    // at the same positions, whether turn by turn or as one prompt.
    for (const char* feed : {"whole", "chunks"}) {
        const std::string other = (tmp / (std::string(feed) + ".jsonl")).string();
        EXPECT_TRUE(exited_with(run_mnemo("eval --questions " + shell_quote(file) + " --items " + shell_quote(other) +
                                          " --history-feed " + feed),
                                0));
        EXPECT_EQ(read_jsonl(other)[0].find("output")->as_string(), a2) << feed;
    }
    EXPECT_TRUE(exited_with(run_mnemo("eval --questions " + shell_quote(file) + " --history-feed sideways"), 2,
                            {"--history-feed", "turns, whole or chunks"}));
    fs::remove_all(tmp);
}
