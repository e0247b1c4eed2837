#include "eval/logit_base_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include "mnemo/error.hpp"
#include "mnemo/io/atomic_file.hpp"
#include "mnemo/io/file_read.hpp"

namespace mnemo::cli {

namespace {

constexpr char kMagic[8] = {'M', 'N', 'E', 'M', 'O', 'K', 'L', 'B'};
// Bounds that no real run comes near, checked before any size arithmetic so that the products
// below cannot overflow and a hostile header cannot ask for a huge allocation.
constexpr uint32_t kMaxVocab = 1u << 24;
constexpr uint32_t kMaxCtx = 1u << 24;
constexpr uint32_t kMaxChunks = 1u << 24;

uint32_t get_u32(const uint8_t* p) {
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
uint64_t get_u64(const uint8_t* p) { return uint64_t{get_u32(p)} | uint64_t{get_u32(p + 4)} << 32; }
float get_f32(const uint8_t* p) {
    const uint32_t u = get_u32(p);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
void put_u32(std::string& s, uint32_t v) {
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
void put_u64(std::string& s, uint64_t v) {
    put_u32(s, static_cast<uint32_t>(v));
    put_u32(s, static_cast<uint32_t>(v >> 32));
}
void put_f32(std::string& s, float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    put_u32(s, u);
}

[[noreturn]] void bad(const std::string& name, const std::string& what) {
    throw Error("base file '" + name + "': " + what);
}

void check_range(const std::string& name, const char* field, uint64_t v, uint64_t lo, uint64_t hi) {
    if (v < lo || v > hi)
        bad(name, std::string("field '") + field + "' is " + std::to_string(v) + ", expected " + std::to_string(lo) +
                      ".." + std::to_string(hi));
}

}  // namespace

uint64_t hash_token_ids(const std::vector<int32_t>& ids) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const int32_t id : ids) {
        const uint32_t u = static_cast<uint32_t>(id);
        for (int i = 0; i < 4; ++i) {
            h ^= (u >> (8 * i)) & 0xffu;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

LogitBaseHeader parse_logit_base_header(const uint8_t* data, size_t size, uint64_t file_size, const std::string& name) {
    if (size < LogitBaseHeader::kBytes || file_size < LogitBaseHeader::kBytes)
        bad(name, "truncated header: " + std::to_string(std::min<uint64_t>(size, file_size)) + " bytes, expected " +
                      std::to_string(LogitBaseHeader::kBytes));
    if (std::memcmp(data, kMagic, 8) != 0) bad(name, "field 'magic' is not \"MNEMOKLB\" (not a base file of mnemo perplexity)");
    LogitBaseHeader h;
    h.version = get_u32(data + 8);
    if (h.version != LogitBaseHeader::kVersion)
        bad(name, "field 'version' is " + std::to_string(h.version) + ", this Mnemo reads version " +
                      std::to_string(LogitBaseHeader::kVersion));
    h.vocab = get_u32(data + 12);
    h.n_ctx = get_u32(data + 16);
    h.first = get_u32(data + 20);
    h.n_chunks = get_u32(data + 24);
    h.rows_per_chunk = get_u32(data + 28);
    h.n_tokens = get_u64(data + 32);
    h.tokens_hash = get_u64(data + 40);
    check_range(name, "vocab", h.vocab, 2, kMaxVocab);
    check_range(name, "n_ctx", h.n_ctx, 4, kMaxCtx);
    check_range(name, "first", h.first, 1, h.n_ctx - 2);
    check_range(name, "n_chunks", h.n_chunks, 1, kMaxChunks);
    if (h.rows_per_chunk != h.n_ctx - 1 - h.first)
        bad(name, "field 'rows_per_chunk' is " + std::to_string(h.rows_per_chunk) + ", expected n_ctx - 1 - first = " +
                      std::to_string(h.n_ctx - 1 - h.first));
    if (h.n_tokens != uint64_t{h.n_chunks} * h.n_ctx)
        bad(name, "field 'n_tokens' is " + std::to_string(h.n_tokens) + ", expected n_chunks * n_ctx = " +
                      std::to_string(uint64_t{h.n_chunks} * h.n_ctx));
    // rows() < 2^48 and row_bytes() < 2^26: the product fits in 64 bits.
    if (file_size != h.file_bytes())
        bad(name, "file size is " + std::to_string(file_size) + " bytes, the header says " + std::to_string(h.file_bytes()) +
                      " (" + std::to_string(h.rows()) + " rows of " + std::to_string(h.row_bytes()) + " bytes)" +
                      (file_size < h.file_bytes() ? ": truncated" : ""));
    return h;
}

std::string logit_base_header_bytes(const LogitBaseHeader& h) {
    std::string s(kMagic, 8);
    put_u32(s, h.version);
    put_u32(s, h.vocab);
    put_u32(s, h.n_ctx);
    put_u32(s, h.first);
    put_u32(s, h.n_chunks);
    put_u32(s, h.rows_per_chunk);
    put_u64(s, h.n_tokens);
    put_u64(s, h.tokens_hash);
    return s;
}

void check_logit_base_matches(const LogitBaseHeader& base, const LogitBaseHeader& run, const std::string& name) {
    auto differs = [&](const char* what, uint64_t b, uint64_t r, const char* hint) {
        if (b != r)
            bad(name, std::string("it was made with ") + what + " " + std::to_string(b) + ", this run has " +
                          std::to_string(r) + hint);
    };
    differs("vocab", base.vocab, run.vocab, " (a model with another vocabulary)");
    differs("n_ctx", base.n_ctx, run.n_ctx, " (use the same -c)");
    differs("n_chunks", base.n_chunks, run.n_chunks, " (use the same text and --chunks)");
    differs("first", base.first, run.first, "");
    if (base.tokens_hash != run.tokens_hash)
        bad(name, "it was made from other tokens (tokens_hash differs: another text or another tokenizer)");
}

std::string encode_logit_base_row(const std::vector<double>& logprobs) {
    double lo = 0.0, hi = -std::numeric_limits<double>::infinity();
    for (const double v : logprobs) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    // A -inf log-probability (a logit of -inf) is stored as the lowest finite one the row can hold.
    if (!std::isfinite(lo)) lo = std::max(hi - 1e4, -1e30);
    hi = std::min(hi, 0.0);
    const double step = hi > lo ? (hi - lo) / 65535.0 : 0.0;
    std::string s;
    s.reserve(8 + 2 * logprobs.size());
    put_f32(s, static_cast<float>(lo));
    put_f32(s, static_cast<float>(step));
    const double lo_f = static_cast<float>(lo), step_f = static_cast<float>(step);
    for (const double v : logprobs) {
        const double q = step_f > 0 ? std::round((std::max(v, lo_f) - lo_f) / step_f) : 0.0;
        const auto u = static_cast<uint16_t>(std::clamp(q, 0.0, 65535.0));
        s.push_back(static_cast<char>(u & 0xff));
        s.push_back(static_cast<char>(u >> 8));
    }
    return s;
}

void decode_logit_base_row(const uint8_t* row, uint32_t vocab, uint64_t row_index, const std::string& name,
                           std::vector<double>& logprobs) {
    const float lo = get_f32(row), step = get_f32(row + 4);
    const std::string where = "row " + std::to_string(row_index) + ": ";
    if (!std::isfinite(lo) || lo > 0.0f) bad(name, where + "field 'lp_min' is " + std::to_string(lo) + ", expected a finite value <= 0");
    if (!std::isfinite(step) || step < 0.0f) bad(name, where + "field 'lp_step' is " + std::to_string(step) + ", expected a finite value >= 0");
    // Log-probabilities are <= 0; a little above allows for float rounding of lo + 65535 * step.
    if (double{lo} + 65535.0 * step > 1e-3) bad(name, where + "lp_min + 65535 * lp_step is above 0 (not log-probabilities)");
    logprobs.resize(vocab);
    const uint8_t* q = row + 8;
    for (uint32_t v = 0; v < vocab; ++v) logprobs[v] = double{lo} + double{step} * (q[2 * v] | q[2 * v + 1] << 8);
}

LogitBaseWriter::LogitBaseWriter(const std::string& path, const LogitBaseHeader& header)
    : path_(path), header_(header), out_(std::make_unique<AtomicFileWriter>(path)) {
    out_->write(logit_base_header_bytes(header_));
}

LogitBaseWriter::~LogitBaseWriter() = default;

void LogitBaseWriter::write_row(const std::vector<double>& logprobs) {
    if (logprobs.size() != header_.vocab || rows_written_ >= header_.rows())
        throw Error("writing base file '" + path_ + "': row " + std::to_string(rows_written_) + " does not fit the header");
    out_->write(encode_logit_base_row(logprobs));
    ++rows_written_;
}

void LogitBaseWriter::finish() {
    if (rows_written_ != header_.rows())
        throw Error("writing base file '" + path_ + "': " + std::to_string(rows_written_) + " rows written, the header says " +
                    std::to_string(header_.rows()));
    out_->commit();
}

LogitBaseReader::LogitBaseReader(const std::string& path) : path_(path) {
    // A regular file only (a FIFO or device would block or never end); errors name the path.
    const OpenedFile of = open_regular_file(path);
    f_ = fdopen(of.fd, "rb");
    if (f_ == nullptr) {
        close(of.fd);
        throw Error("cannot open base file '" + path + "': " + std::strerror(errno));
    }
    try {  // the destructor does not run for a constructor that throws
        uint8_t head[LogitBaseHeader::kBytes];
        const size_t got = std::fread(head, 1, sizeof head, f_);
        header_ = parse_logit_base_header(head, got, of.size, path);
        buf_.resize(header_.row_bytes());
    } catch (...) {
        std::fclose(f_);
        f_ = nullptr;
        throw;
    }
}

LogitBaseReader::~LogitBaseReader() {
    if (f_ != nullptr) std::fclose(f_);
}

void LogitBaseReader::read_row(std::vector<double>& logprobs) {
    if (rows_read_ >= header_.rows()) throw Error("base file '" + path_ + "': read past its last row");
    if (std::fread(buf_.data(), 1, buf_.size(), f_) != buf_.size())
        bad(path_, "row " + std::to_string(rows_read_) + " is truncated (the file changed while it was read?)");
    decode_logit_base_row(buf_.data(), header_.vocab, rows_read_, path_, logprobs);
    ++rows_read_;
}

}  // namespace mnemo::cli
