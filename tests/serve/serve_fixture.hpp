// The default model as `mnemo serve` runs it, in process: its tokenizer and chat template, a
// session of n slots and, when asked, a small memory folder of the world's knowledge (the
// paragraphs about the first held-out entities and some others), behind a RetrievalRecorder.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/memory/retrieval_recorder.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::serve::test {

inline std::string default_model_dir() { return std::string(MNEMO_SOURCE_DIR) + "/assets/default-model"; }

struct Question {
    std::string question, answer;
};

// The first n questions of the held-out set (entities the model never saw: answered only from memories).
inline std::vector<Question> held_out_questions(size_t n) {
    std::ifstream f(std::string(MNEMO_SOURCE_DIR) + "/assets/world/questions-held_out.jsonl");
    std::vector<Question> out;
    for (std::string line; out.size() < n && std::getline(f, line);) {
        auto field = [&](const std::string& key) {
            const size_t k = line.find("\"" + key + "\": \"");
            const size_t b = k + key.size() + 5, e = line.find('"', b);
            return line.substr(b, e - b);
        };
        out.push_back({field("question"), field("answer")});
    }
    return out;
}

struct DefaultModel {
    std::unique_ptr<Tokenizer> tok;
    ChatTemplate tmpl;
    std::unique_ptr<Session> session;
    std::shared_ptr<RetrievalRecorder> recorder;
    std::string folder;
};

// Paragraphs of knowledge.txt that name `names`, and the first `others` paragraphs.
inline std::vector<std::string> knowledge_paragraphs(const std::vector<std::string>& names, size_t others) {
    std::ifstream f(std::string(MNEMO_SOURCE_DIR) + "/assets/world/knowledge.txt");
    std::vector<std::string> out;
    size_t seen = 0;
    for (std::string line; std::getline(f, line);) {
        if (line.empty()) continue;
        bool wanted = seen++ < others;
        for (const std::string& n : names) wanted = wanted || line.find(n) != std::string::npos;
        if (wanted) out.push_back(line);
    }
    return out;
}

// The paragraphs about the first 24 held-out entities, and 40 others.
inline std::vector<std::string> world_paragraphs() {
    // The names of the first held-out entities: "Where was Quear Mousaim born?" -> "Quear Mousaim".
    std::vector<std::string> names;
    for (const Question& q : held_out_questions(24)) {
        const std::string& s = q.question;
        const size_t w = s.find(" was ") != std::string::npos ? s.find(" was ") + 5 : s.find(" does ") + 6;
        const size_t e = s.find(s.find(" born") != std::string::npos ? " born" : " do ", w);
        names.push_back(s.substr(w, e - w));
    }
    return knowledge_paragraphs(names, 40);
}

// `paragraphs`: the memory folder's texts (empty: the world's, as above).
inline DefaultModel open_default_model(int32_t slots, bool memories, int32_t n_ctx = 1024,
                                       std::vector<std::string> paragraphs = {}) {
    DefaultModel m;
    const std::string dir = default_model_dir();
    m.tok = load_tokenizer(dir);
    std::string note;
    m.tmpl = detect_chat_template(dir, &note);
    SessionOptions o;
    o.model_dir = dir;
    o.backend = "cpu";
    o.n_seq = slots;
    o.n_ctx = n_ctx;
    o.n_threads = 2;
    m.session = Session::open(o);
    if (!memories) return m;
    if (paragraphs.empty()) paragraphs = world_paragraphs();
    std::vector<std::vector<int32_t>> refs;
    std::vector<MemoryReference> references;
    for (const std::string& p : paragraphs) {
        refs.push_back(m.tok->encode(p, /*parse_special=*/false));
        references.push_back({refs.back(), p, "knowledge.txt"});
    }
    const std::vector<WrittenMemory> written = m.session->write_memories(refs);
    const MemoryFolderModel model = memory_folder_model(*m.session);
    static int opened = 0;  // each model its own folder, when a test opens one beside the suite's
    m.folder = (std::filesystem::temp_directory_path() / ("mnemo-serve-test-" + std::to_string(::getpid()) + "-" +
                                                           std::to_string(++opened)))
                   .string();
    write_memory_folder(m.folder, model, written, references, /*replace=*/true);
    // The default model's own retrieval advice (generation_config.json): cut 0.8, floor 3.
    auto source = std::make_shared<FolderMemorySource>(m.folder, model, RetrievalMode::BM25, 0.8, 3);
    m.recorder = std::make_shared<RetrievalRecorder>(source);
    m.session->set_memory_source(m.recorder);
    return m;
}

// A test suite on the default model with 8 slots and the memory folder, opened once per suite.
class DefaultModelSuite : public ::testing::Test {
protected:
    static void SetUpTestSuite() { model_ = new DefaultModel(open_default_model(8, /*memories=*/true)); }
    static void TearDownTestSuite() {
        std::filesystem::remove_all(model_->folder);
        delete model_;
        model_ = nullptr;
    }
    static inline DefaultModel* model_ = nullptr;
};

}  // namespace mnemo::serve::test
