// The base file of `mnemo perplexity --save-base / --kl-base`: the log-probabilities a reference
// model (usually the f32 or f16 one) gives at every scored position of every chunk, so a quantized
// model can be compared with it later without loading both. Layout (little-endian; docs/cli.md,
// "Base file of mnemo perplexity"):
//
//   offset  0  char[8] magic "MNEMOKLB"
//           8  u32 version (1)
//          12  u32 vocab          tokens per row
//          16  u32 n_ctx          tokens per chunk
//          20  u32 first          first scored position of a chunk (n_ctx / 2)
//          24  u32 n_chunks
//          28  u32 rows_per_chunk scored positions per chunk (n_ctx - 1 - first)
//          32  u64 n_tokens       tokens evaluated (n_chunks * n_ctx)
//          40  u64 tokens_hash    FNV-1a 64 over those token ids (int32 little-endian)
//          48  rows: n_chunks * rows_per_chunk of { f32 lp_min, f32 lp_step, u16 q[vocab] },
//              log-probability of token v = lp_min + q[v] * lp_step
//
// 16-bit steps over a row's range keep a log-probability within half a step (range / 131070,
// about 3e-4 nats for a 40-nat range): KL and top-1 agreement come out unchanged at the digits
// the command prints, at a quarter of the f64 size.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace mnemo {
class AtomicFileWriter;
}

namespace mnemo::cli {

struct LogitBaseHeader {
    static constexpr size_t kBytes = 48;
    static constexpr uint32_t kVersion = 1;
    uint32_t version = kVersion;
    uint32_t vocab = 0;
    uint32_t n_ctx = 0;
    uint32_t first = 0;
    uint32_t n_chunks = 0;
    uint32_t rows_per_chunk = 0;
    uint64_t n_tokens = 0;
    uint64_t tokens_hash = 0;

    uint64_t row_bytes() const { return 8 + 2 * uint64_t{vocab}; }
    uint64_t rows() const { return uint64_t{n_chunks} * rows_per_chunk; }
    uint64_t file_bytes() const { return kBytes + rows() * row_bytes(); }
};

// FNV-1a 64 over the ids as int32 little-endian: names the tokens a base was made from.
uint64_t hash_token_ids(const std::vector<int32_t>& ids);

// The header of a base file whose whole size is `file_size`, from its first `size` bytes.
// Throws mnemo::Error naming `name` and the field for a wrong magic or version, a count out of
// range or inconsistent with the others, or a file size that is not what the header says.
LogitBaseHeader parse_logit_base_header(const uint8_t* data, size_t size, uint64_t file_size, const std::string& name);
std::string logit_base_header_bytes(const LogitBaseHeader& h);

// Refuses a base made for another run, naming what differs (vocab, n_ctx, chunk count, tokens).
void check_logit_base_matches(const LogitBaseHeader& base, const LogitBaseHeader& run, const std::string& name);

// One row: log-probabilities (<= 0) -> bytes, and back. decode throws naming `name` and the row
// when lp_min / lp_step are not finite, negative step, or the range goes above log(1).
std::string encode_logit_base_row(const std::vector<double>& logprobs);
void decode_logit_base_row(const uint8_t* row, uint32_t vocab, uint64_t row_index, const std::string& name,
                           std::vector<double>& logprobs);

// Writes a base file row by row; nothing appears at `path` unless finish() is reached.
class LogitBaseWriter {
public:
    LogitBaseWriter(const std::string& path, const LogitBaseHeader& header);
    ~LogitBaseWriter();
    void write_row(const std::vector<double>& logprobs);
    void finish();

private:
    std::string path_;
    LogitBaseHeader header_;
    uint64_t rows_written_ = 0;
    std::unique_ptr<AtomicFileWriter> out_;
};

// Reads a base file row by row (one row in memory at a time, whatever the file's size).
class LogitBaseReader {
public:
    explicit LogitBaseReader(const std::string& path);
    ~LogitBaseReader();
    const LogitBaseHeader& header() const { return header_; }
    void read_row(std::vector<double>& logprobs);

private:
    std::string path_;
    LogitBaseHeader header_;
    uint64_t rows_read_ = 0;
    std::FILE* f_ = nullptr;
    std::vector<uint8_t> buf_;
};

}  // namespace mnemo::cli
