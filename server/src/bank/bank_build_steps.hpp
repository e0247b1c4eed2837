// The steps build_bank (bank_build.cpp) is made of: the corpus cut into references, the batches
// memorized or read back from their checkpoints, and a batch of f32 memories encoded into the
// version being written. Internal to the builder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "app/corpus.hpp"
#include "bank_storage.hpp"
#include "bank_writer.hpp"
#include "compress.hpp"
#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo {
class Session;
class Tokenizer;
}  // namespace mnemo

namespace mnemo::kb {

// The corpus as a build holds it: what each document's records name, and each reference's
// document and token ids. A reference's text is not kept: app::cut_references defines it as its
// tokens decoded, so it is decoded again when its record is written, and the documents' texts are
// dropped once cut. What stays is ~4 bytes per token.
struct BuildCorpus {
    struct Reference {
        size_t document = 0;
        std::vector<int32_t> tokens;
    };
    std::vector<BankDocumentRef> documents;
    std::vector<bool> has_text;  // per document: at least one reference
    std::vector<Reference> references;
    uint64_t tokens = 0;
};

// Cuts documents 0..count-1 one at a time, as app::cut_references cuts them all: `take(i)` gives
// document i (moved out of a corpus the builder owns, or a copy), which is dropped once cut.
BuildCorpus cut_build_corpus(size_t count, const std::function<app::CorpusDocument(size_t)>& take, const Tokenizer& tok,
                             int32_t reference_length);

// Batch b of a corpus's references: references [first, last).
struct BatchRange {
    size_t first = 0, last = 0;
    size_t size() const { return last - first; }
};

// The memorized batches of one build: each from its checkpoint when that holds it whole, else
// memorized by the session and checkpointed before it is returned.
class BatchMemories {
public:
    BatchMemories(Session& session, BankStorage& storage, std::string key, const MemorySpec& spec, const BuildCorpus& corpus,
                  size_t batch);
    size_t batches() const { return batches_; }
    BatchRange range(size_t b) const;
    // Batch b's f32 memories; *from_checkpoint says which way they came.
    std::vector<WrittenMemory> get(size_t b, bool* from_checkpoint);

private:
    Session& session_;
    BankStorage& st_;
    std::string key_;
    const MemorySpec& spec_;
    const BuildCorpus& corpus_;
    size_t batch_, batches_;
};

// Encodes one batch's f32 memories (references range.first..) with `codecs` and appends them, in
// order, to the version being written, adding how well the codec reconstructs them to `fit`.
// threads > 0: FAISS's OpenMP threads on this thread.
void append_encoded_batch(BankVersionStream& stream, const TrainedCodecs& codecs, const MemorySpec& spec, const BuildCorpus& corpus,
                          const Tokenizer& tok, BatchRange range, std::vector<WrittenMemory>&& memories, int threads,
                          CodecFit& fit);

}  // namespace mnemo::kb
