// `mnemo-kb compress` as a library call: an f32 memory folder (made by `mnemo memorize`) in, the
// same memories as VQ codes out, with one FAISS codec trained on all keys and one on all values
// (Memory3 §3.3, "OPQ20x80-Residual2x14-PQ8x10"), plus the figures that say what was lost.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compress_metrics.hpp"
#include "mnemo/memory/explicit_memory.hpp"
#include "vq_codec.hpp"

namespace mnemo::kb {

struct CompressOptions {
    std::string in_dir;
    std::string out_dir;
    std::string key_factory;    // empty: default_factory(head_dim)
    std::string value_factory;  // empty: default_factory(value_dim)
    bool replace = false;       // replace out_dir if it exists (atomically, once complete)
    TrainOptions train;
    int threads = 0;                  // OpenMP threads FAISS may use; 0: OpenMP's default
    size_t decode_check_rows = 512;   // per codec: sampled codes checked against VQ_DECODE
    std::function<void(const std::string&)> progress;  // one line per step; may be empty
};

struct CodecReport {
    std::string factory;
    std::string sha256;               // of the canonical codebook bytes (the manifest's)
    uint32_t dim = 0;                 // floats per vector
    uint32_t code_bytes = 0;          // bytes per encoded vector
    uint64_t training_vectors = 0;    // the valid slots (slot < n_valid) of every memory
    uint64_t encoded_vectors = 0;     // every slot (unused ones too: records have a fixed size)
    double reconstruction_error = 0;  // sum ||x - decode(encode(x))||^2 / sum ||x||^2, valid slots
    uint64_t decode_checked = 0;      // vectors VQ_DECODE's reference reproduced bit for bit
    double train_seconds = 0;
    double ratio_vs_f16() const { return code_bytes ? 2.0 * dim / code_bytes : 0.0; }
};

struct CompressReport {
    uint64_t memories = 0;
    CodecReport keys;
    CodecReport values;
    uint64_t record_bytes_f32 = 0;  // the folders' fixed record sizes (manifest record_bytes)
    uint64_t record_bytes_vq = 0;
    double attention_error = 0;     // relative L2 error of memory-head attention outputs
    std::vector<std::string> notes; // e.g. fewer training vectors than FAISS recommends
    double record_ratio() const {
        return record_bytes_vq ? static_cast<double>(record_bytes_f32) / static_cast<double>(record_bytes_vq) : 0.0;
    }
};

// Reads o.in_dir (an f32 folder), trains, encodes, checks a sample against VQ_DECODE's reference,
// measures, and writes o.out_dir with write_memory_folder (atomic). Throws mnemo::Error: a folder
// that is already compressed, a bad factory, too few training vectors (naming the count needed
// and a smaller factory), a decode mismatch.
CompressReport compress_memory_folder(const CompressOptions& o);

// The steps compress_memory_folder is made of, for memories held in memory (the bank builder,
// bank/bank_build.cpp, trains on what it memorized and encodes batch by batch).
struct TrainedCodecs {
    std::unique_ptr<VqCodec> keys;
    std::unique_ptr<VqCodec> values;
    MemoryCodec codec;  // their codebooks
};
// Builds both codecs from o.key_factory / o.value_factory (empty: the default factory), a bad
// factory failing before any training, then trains each on the valid slots of the f32 memories.
// Fills r.keys/r.values' factory and training figures and appends to r.notes.
TrainedCodecs train_memory_codecs(const std::vector<WrittenMemory>& memories, const MemorySpec& spec, const CompressOptions& o,
                                  CompressReport& r);
// The two steps of train_memory_codecs apart, for a caller that draws its own training set (the
// bank builder's sample, bank/bank_codec_sample.hpp). make_memory_codecs: both codecs built,
// untrained (codec stays empty), so a bad factory fails before anything is memorized; fills
// r.keys/r.values' factory. train_memory_codecs_on: trains them on n rows of head_dim keys and n
// rows of value_dim values (the same slots), sets t.codec, fills the training figures and notes.
TrainedCodecs make_memory_codecs(const MemorySpec& spec, const CompressOptions& o, CompressReport& r);
void train_memory_codecs_on(TrainedCodecs& t, const float* keys, const float* values, size_t n, const CompressOptions& o,
                            CompressReport& r);
// How well a codec reconstructs the memories it encoded: the valid slots' keys and values, each
// summed as ErrorSum (relative squared error, what `compress` reports as reconstruction error).
// A bank records it for the memories its codec was trained with, and `add` compares the memories
// it encodes with that (bank_codec_fit.hpp).
struct CodecFit {
    ErrorSum keys, values;
};

// f32 memories as compressed ones (codes as VQ_DECODE words; id, n_valid, indices and the
// retrieval vector moved over). Throws when a memory does not have the spec's shape. threads > 0:
// FAISS's OpenMP threads on the calling thread (0 leaves them as they are). `fit`: when given,
// the codes are decoded again and their reconstruction error added to it.
std::vector<WrittenMemory> encode_memories(std::vector<WrittenMemory>&& memories, const MemorySpec& spec, const VqCodec& keys,
                                           const VqCodec& values, const MemoryCodec& codec, int threads = 0,
                                           CodecFit* fit = nullptr);

}  // namespace mnemo::kb
