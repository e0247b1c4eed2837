#include "bank_build_steps.hpp"

#include "bank_staging.hpp"
#include "mnemo/error.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::kb {

BuildCorpus cut_build_corpus(size_t count, const std::function<app::CorpusDocument(size_t)>& take, const Tokenizer& tok,
                             int32_t reference_length) {
    BuildCorpus c;
    c.documents.reserve(count);
    c.has_text.assign(count, false);
    std::vector<app::CorpusDocument> one(1);
    for (size_t d = 0; d < count; ++d) {
        one[0] = take(d);
        app::CorpusDocument& doc = one[0];
        // One document at a time through the shared cutter: the same references it cuts from all.
        std::vector<app::CorpusReference> refs = app::cut_references(one, tok, reference_length);
        std::vector<int32_t> title_tokens = refs.empty() ? std::vector<int32_t>{} : std::move(refs[0].title_tokens);
        c.documents.push_back({std::move(doc.doc_id), std::move(doc.title), std::move(doc.source), std::move(doc.metadata_json), std::move(title_tokens)});
        c.has_text[d] = !refs.empty();
        for (app::CorpusReference& r : refs) {
            c.tokens += r.tokens.size();
            c.references.push_back({d, std::move(r.tokens)});
        }
        one[0] = app::CorpusDocument{};  // its text freed now
    }
    return c;
}

BatchMemories::BatchMemories(Session& session, BankStorage& storage, std::string key, const MemorySpec& spec, const BuildCorpus& corpus,
                             size_t batch)
    : session_(session),
      st_(storage),
      key_(std::move(key)),
      spec_(spec),
      corpus_(corpus),
      batch_(batch),
      batches_((corpus.references.size() + batch - 1) / batch) {}

BatchRange BatchMemories::range(size_t b) const {
    const size_t first = b * batch_;
    return {first, std::min(corpus_.references.size(), first + batch_)};
}

std::vector<WrittenMemory> BatchMemories::get(size_t b, bool* from_checkpoint) {
    const BatchRange r = range(b);
    const std::string blob = staging_blob(key_, b);
    if (std::optional<std::string> bytes = st_.read_blob(blob)) {
        std::optional<std::vector<WrittenMemory>> batch = decode_staged_batch(*bytes, spec_, r.size());
        bytes.reset();
        if (batch) {
            if (from_checkpoint) *from_checkpoint = true;
            return std::move(*batch);
        }
        st_.remove_blob(blob);  // damaged: memorized again
    }
    std::vector<std::vector<int32_t>> tokens;
    tokens.reserve(r.size());
    for (size_t i = r.first; i < r.last; ++i) tokens.push_back(corpus_.references[i].tokens);
    std::vector<WrittenMemory> batch = session_.write_memories(tokens);
    if (batch.size() != r.size())
        throw Error("the session wrote " + std::to_string(batch.size()) + " memories for " + std::to_string(r.size()) + " references");
    st_.write_blob(blob, encode_staged_batch(batch, spec_));
    if (from_checkpoint) *from_checkpoint = false;
    return batch;
}

void append_encoded_batch(BankVersionStream& stream, const TrainedCodecs& codecs, const MemorySpec& spec, const BuildCorpus& corpus,
                          const Tokenizer& tok, BatchRange range, std::vector<WrittenMemory>&& memories, int threads,
                          CodecFit& fit) {
    const std::vector<WrittenMemory> encoded =
        encode_memories(std::move(memories), spec, *codecs.keys, *codecs.values, codecs.codec, threads, &fit);
    for (size_t i = 0; i < encoded.size(); ++i) {
        const BuildCorpus::Reference& ref = corpus.references[range.first + i];
        stream.add(encoded[i], ref.tokens, tok.decode(ref.tokens, /*skip_special=*/false), corpus.documents[ref.document]);
    }
}

}  // namespace mnemo::kb
