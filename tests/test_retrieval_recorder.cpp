// RetrievalRecorder (mnemo/memory/retrieval_recorder.hpp), the one recorder of what each chunk
// retrieved that `mnemo ask`, `mnemo eval` and mnemo-chat share: per sequence and per chunk, with
// what a knowledge server says of each reference, passing every call through. With a real memory
// folder it is run by test_cli_ask.cpp, test_cli_eval.cpp and tests/gui/test_model_worker.cpp,
// with a real knowledge server by tests/gui/test_kb.cpp.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/kb/kb_source.hpp"
#include "mnemo/memory/retrieval_recorder.hpp"

using namespace mnemo;

namespace {

std::shared_ptr<const ExplicitMemory> memory(uint32_t id) {
    auto m = std::make_shared<ExplicitMemory>();
    m->id = id;
    return m;
}

// Gives each retrieve() the next list of ids of its sequence, and notes what reached it.
class ScriptedSource : public MemorySource {
public:
    explicit ScriptedSource(std::map<int32_t, std::vector<std::vector<uint32_t>>> script) : script_(std::move(script)) {}
    bool wants_vector() const override { return true; }
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& query, int32_t k) override {
        last_k = k;
        std::vector<std::shared_ptr<const ExplicitMemory>> out;
        auto& chunks = script_[query.seq];
        if (chunks.empty()) return out;
        for (uint32_t id : chunks.front()) out.push_back(memory(id));
        chunks.erase(chunks.begin());
        return out;
    }
    std::string describe() const override { return "scripted"; }
    bool prefetches() const override { return true; }
    void prefetch(const ChunkQuery& query, int32_t k) override { prefetched.push_back({query.seq, k}); }

    int32_t last_k = 0;
    std::vector<std::pair<int32_t, int32_t>> prefetched;

private:
    std::map<int32_t, std::vector<std::vector<uint32_t>>> script_;
};

// A knowledge server's client as the recorder sees it: its last chunk's references, described.
class DescribingKb : public KbSource {
public:
    bool wants_vector() const override { return false; }
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery& query, int32_t) override {
        std::vector<std::shared_ptr<const ExplicitMemory>> out;
        last_.clear();
        if (down) return out;  // the server did not answer: no memories, no references
        for (uint32_t id : {4u, 9u}) {
            out.push_back(memory(id));
            RetrievedReference r;
            r.id = id;
            r.score = 1.0f / static_cast<float>(id);
            r.has_score = true;
            r.text = "text " + std::to_string(id);
            r.title = "title " + std::to_string(id);
            r.source = "knowledge.jsonl";
            last_[query.seq].push_back(r);
        }
        return out;
    }
    std::string describe() const override { return "kb"; }
    KbSourceStatus status() const override { return {}; }
    std::vector<RetrievedReference> last_references(int32_t seq) const override {
        const auto it = last_.find(seq);
        return it == last_.end() ? std::vector<RetrievedReference>{} : it->second;
    }

    bool down = false;

private:
    std::map<int32_t, std::vector<RetrievedReference>> last_;
};

ChunkQuery chunk_of(int32_t seq) {
    ChunkQuery q;
    q.seq = seq;
    return q;
}

std::vector<uint32_t> ids(const std::vector<RetrievedReference>& refs) {
    std::vector<uint32_t> out;
    for (const RetrievedReference& r : refs) out.push_back(r.id);
    return out;
}

std::vector<int32_t> chunks(const std::vector<RetrievedReference>& refs) {
    std::vector<int32_t> out;
    for (const RetrievedReference& r : refs) out.push_back(r.chunk);
    return out;
}

}  // namespace

TEST(RetrievalRecorder, KeepsEachSequenceChunkByChunkUntilTaken) {
    auto inner = std::make_shared<ScriptedSource>(std::map<int32_t, std::vector<std::vector<uint32_t>>>{
        {0, {{3, 5}, {5, 8}, {2}}}, {1, {{1}}}});
    RetrievalRecorder recorder(inner);
    EXPECT_EQ(recorder.kb(), nullptr);
    EXPECT_EQ(recorder.retrieve(chunk_of(0), 2).size(), 2u);
    EXPECT_EQ(inner->last_k, 2);
    recorder.retrieve(chunk_of(1), 2);
    recorder.retrieve(chunk_of(0), 2);

    const std::vector<RetrievedReference> seq0 = recorder.take(0);
    EXPECT_EQ(ids(seq0), (std::vector<uint32_t>{3, 5, 5, 8}));
    EXPECT_EQ(chunks(seq0), (std::vector<int32_t>{1, 1, 2, 2}));
    for (const RetrievedReference& r : seq0) {
        EXPECT_FALSE(r.has_score) << "a source that is no knowledge server says nothing of its references";
        EXPECT_TRUE(r.text.empty() && r.title.empty() && r.source.empty());
    }
    EXPECT_EQ(ids(recorder.take(1)), (std::vector<uint32_t>{1}));
    EXPECT_TRUE(recorder.take(0).empty()) << "taken: forgotten";
    EXPECT_TRUE(recorder.take(7).empty()) << "a sequence that never retrieved";

    // After a take, chunks count from 1 again.
    recorder.retrieve(chunk_of(0), 2);
    const std::vector<RetrievedReference> next = recorder.take(0);
    EXPECT_EQ(ids(next), (std::vector<uint32_t>{2}));
    EXPECT_EQ(chunks(next), (std::vector<int32_t>{1}));
}

TEST(RetrievalRecorder, PassesEveryOtherCallThrough) {
    auto inner = std::make_shared<ScriptedSource>(std::map<int32_t, std::vector<std::vector<uint32_t>>>{});
    RetrievalRecorder recorder(inner);
    EXPECT_TRUE(recorder.wants_vector());
    EXPECT_EQ(recorder.describe(), "scripted");
    EXPECT_TRUE(recorder.prefetches());
    recorder.prefetch(chunk_of(3), 5);
    ASSERT_EQ(inner->prefetched.size(), 1u);
    EXPECT_EQ(inner->prefetched[0], (std::pair<int32_t, int32_t>{3, 5}));
    EXPECT_EQ(recorder.codec(), nullptr);
    EXPECT_TRUE(recorder.retrieve(chunk_of(0), 4).empty());
    EXPECT_TRUE(recorder.take(0).empty());
}

TEST(RetrievalRecorder, TakesWhatAKnowledgeServerSaysOfEachReference) {
    auto kb = std::make_shared<DescribingKb>();
    RetrievalRecorder recorder(kb);
    EXPECT_EQ(recorder.kb(), kb.get());
    recorder.retrieve(chunk_of(2), 2);
    kb->down = true;  // the next chunk gets no memories, hence no references, but is a chunk
    EXPECT_TRUE(recorder.retrieve(chunk_of(2), 2).empty());
    kb->down = false;
    recorder.retrieve(chunk_of(2), 2);

    const std::vector<RetrievedReference> got = recorder.take(2);
    EXPECT_EQ(ids(got), (std::vector<uint32_t>{4, 9, 4, 9}));
    EXPECT_EQ(chunks(got), (std::vector<int32_t>{1, 1, 3, 3}));
    for (const RetrievedReference& r : got) {
        EXPECT_TRUE(r.has_score);
        EXPECT_FLOAT_EQ(r.score, 1.0f / static_cast<float>(r.id));
        EXPECT_EQ(r.text, "text " + std::to_string(r.id));
        EXPECT_EQ(r.title, "title " + std::to_string(r.id));
        EXPECT_EQ(r.source, "knowledge.jsonl");
    }
}

TEST(RetrievalRecorder, DistinctReferencesKeepsTheFirstRetrievalOfEach) {
    std::vector<RetrievedReference> refs(5);
    const uint32_t order[] = {3, 5, 3, 8, 5};
    for (size_t i = 0; i < refs.size(); ++i) {
        refs[i].id = order[i];
        refs[i].chunk = static_cast<int32_t>(i) + 1;
    }
    const std::vector<RetrievedReference> once = distinct_references(refs);
    EXPECT_EQ(ids(once), (std::vector<uint32_t>{3, 5, 8}));
    EXPECT_EQ(chunks(once), (std::vector<int32_t>{1, 2, 4}));
    EXPECT_TRUE(distinct_references({}).empty());
}
