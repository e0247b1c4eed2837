// The trained default model's goldens (tests/data/models/default-model-golden, written by
// tools/train/make_goldens.py) as the tests that compare with them read them: the file paths, the
// five reference texts as token ids, and a memory source that hands every chunk the same memories.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mnemo/memory/explicit_memory.hpp"
#include "model_test_util.hpp"
#include "npy.hpp"

namespace mnemo::test {

inline std::string default_model_path() { return std::string(MNEMO_SOURCE_DIR) + "/assets/default-model"; }
inline std::string default_model_golden(const std::string& file) { return model_dir("default-model-golden") + "/" + file; }

// The five golden references, as token ids.
inline std::vector<std::vector<int32_t>> golden_references() {
    const NpyArray refs = load_npy(default_model_golden("references.npy"));
    const std::vector<int32_t> ids = refs.as_i32();
    const std::vector<int32_t> lens = load_npy(default_model_golden("reference_lengths.npy")).as_i32();
    std::vector<std::vector<int32_t>> out;
    const auto width = static_cast<long>(refs.shape[1]);
    for (size_t i = 0; i < lens.size(); ++i)
        out.emplace_back(ids.begin() + static_cast<long>(i) * width, ids.begin() + static_cast<long>(i) * width + lens[i]);
    return out;
}

// Every chunk reads the same memories (the golden question fits in one 64-token chunk); asking for
// fewer than there are is a test failure.
class FixedSource : public MemorySource {
public:
    explicit FixedSource(std::vector<std::shared_ptr<const ExplicitMemory>> m) : mems_(std::move(m)) {}
    bool wants_vector() const override { return false; }
    std::vector<std::shared_ptr<const ExplicitMemory>> retrieve(const ChunkQuery&, int32_t k) override {
        EXPECT_LE(static_cast<int32_t>(mems_.size()), k);
        return mems_;
    }
    std::string describe() const override { return "fixed memories"; }

private:
    std::vector<std::shared_ptr<const ExplicitMemory>> mems_;
};

}  // namespace mnemo::test
