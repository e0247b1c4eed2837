// GGUF reading (mnemo/io/gguf.hpp): what the writer writes reads back, and every lie a hostile
// file can tell (magic, version, counts, string and array lengths, value and tensor types, dims,
// alignment, offsets, sizes) is a mnemo::Error naming the key or tensor and what was expected.
// The fuzz target tests/fuzz/fuzz_gguf.cpp starts from the seed files the last test checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "fixtures/error_checks.hpp"
#include "fixtures/fifo.hpp"
#include "mnemo/io/gguf.hpp"

using namespace mnemo;
using mnemo::test::required_error;
namespace fs = std::filesystem;

namespace {

// A little-endian byte image built piece by piece, for files no writer would produce.
struct Image {
    std::string b;
    template <typename T>
    Image& put(T v) {
        char c[sizeof(T)];
        std::memcpy(c, &v, sizeof(T));
        b.append(c, sizeof(T));
        return *this;
    }
    Image& str(const std::string& s) {
        put<uint64_t>(s.size());
        b += s;
        return *this;
    }
    Image& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        b += "GGUF";
        return put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
    }
    Image& pad(size_t to) {
        b.resize((b.size() + to - 1) / to * to, '\0');
        return *this;
    }
};

GgufHeader parse(const std::string& bytes) {
    return parse_gguf(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "lie.gguf");
}

std::string parse_error(const std::string& bytes) {
    return required_error("parsing the file", [&] { parse(bytes); });
}

// A small file with one of everything: the seed of the fuzz corpus and the base of the lies.
struct Sample {
    std::vector<float> w = std::vector<float>(2 * 32);
    std::vector<uint8_t> q8 = std::vector<uint8_t>(2 * 34);
    GgufMetadata metadata;
    std::vector<GgufTensorToWrite> tensors;
    Sample() {
        for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.5f - 3.0f;
        for (size_t i = 0; i < q8.size(); ++i) q8[i] = static_cast<uint8_t>(i * 7);
        GgufValue nested;
        nested.type = GgufValueType::Array;
        nested.elem = GgufValueType::Array;
        nested.items = {gguf_ints(GgufValueType::I32, {1, -2}), gguf_strings({"x"})};
        nested.count = 2;
        metadata = {{"general.architecture", gguf_string("llama")},
                    {"general.alignment", gguf_u32(64)},
                    {"llama.block_count", gguf_u32(2)},
                    {"llama.rope.freq_base", gguf_f32(500000.0f)},
                    {"llama.big", gguf_int(GgufValueType::U64, 1ll << 40)},
                    {"llama.negative", gguf_int(GgufValueType::I8, -5)},
                    {"tokenizer.ggml.add_bos_token", gguf_bool(true)},
                    {"tokenizer.ggml.tokens", gguf_strings({"<s>", "a", "\xE2\x96\x81" "b", std::string("\xff\0z", 3)})},
                    {"tokenizer.ggml.scores", gguf_f32s({0.0f, -1.5f, -2.0f, -3.25f})},
                    {"tokenizer.ggml.token_type", gguf_ints(GgufValueType::I32, {3, 1, 1, 6})},
                    {"test.nested", nested}};
        tensors = {{"token_embd.weight", ggml_type::F32, {2, 32}, w.data(), w.size() * 4},
                   {"output.weight", ggml_type::Q8_0, {2, 32}, q8.data(), q8.size()}};
    }
    std::string bytes() const { return gguf_bytes(metadata, tensors); }
};

}  // namespace

TEST(Gguf, WhatTheWriterWritesReadsBack) {
    const Sample s;
    const std::string bytes = s.bytes();
    const GgufHeader h = parse(bytes);
    EXPECT_EQ(h.version, 3u);
    EXPECT_EQ(h.alignment, 64u);
    EXPECT_EQ(h.data_start % 64, 0u);
    ASSERT_EQ(h.metadata.size(), s.metadata.size());
    EXPECT_EQ(h.find("general.architecture")->s, "llama");
    EXPECT_EQ(h.find("llama.block_count")->i, 2);
    EXPECT_EQ(h.find("llama.big")->i, 1ll << 40);
    EXPECT_EQ(h.find("llama.negative")->i, -5);
    EXPECT_FLOAT_EQ(static_cast<float>(h.find("llama.rope.freq_base")->f), 500000.0f);
    EXPECT_TRUE(h.find("tokenizer.ggml.add_bos_token")->b);
    EXPECT_EQ(h.find("tokenizer.ggml.tokens")->strings[3], std::string("\xff\0z", 3));  // bytes kept as stored
    EXPECT_EQ(h.find("tokenizer.ggml.scores")->floats[3], -3.25);
    EXPECT_EQ(h.find("tokenizer.ggml.token_type")->ints, (std::vector<int64_t>{3, 1, 1, 6}));
    const GgufValue* nested = h.find("test.nested");
    ASSERT_EQ(nested->items.size(), 2u);
    EXPECT_EQ(nested->items[0].ints, (std::vector<int64_t>{1, -2}));
    EXPECT_EQ(nested->items[1].strings, (std::vector<std::string>{"x"}));

    ASSERT_EQ(h.tensors.size(), 2u);
    const GgufTensorInfo& q = h.tensors[1];
    EXPECT_EQ(q.name, "output.weight");
    EXPECT_EQ(q.ne, (std::vector<int64_t>{32, 2}));  // innermost first, as ggml stores it
    EXPECT_EQ(q.shape(), (std::vector<int64_t>{2, 32}));
    EXPECT_EQ(q.nbytes, 68u);
    EXPECT_EQ(q.offset % 64, 0u);
    EXPECT_EQ(std::memcmp(bytes.data() + h.data_start + q.offset, s.q8.data(), 68), 0);
    EXPECT_EQ(std::memcmp(bytes.data() + h.data_start + h.tensors[0].offset, s.w.data(), 256), 0);
}

TEST(Gguf, AVocabularyOnlyFileHasNoDataSection) {
    const std::string bytes = gguf_bytes({{"tokenizer.ggml.model", gguf_string("llama")}}, {});
    const GgufHeader h = parse(bytes);
    EXPECT_TRUE(h.tensors.empty());
    EXPECT_EQ(h.find("tokenizer.ggml.model")->s, "llama");
}

TEST(Gguf, TypedLookupsNameTheKeyAndWhatItHolds) {
    const fs::path dir = fs::temp_directory_path() / ("mnemo-gguf-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string path = (dir / "m.gguf").string();
    const Sample s;
    write_gguf(path, s.metadata, s.tensors);
    ASSERT_TRUE(looks_like_gguf(path));
    const GgufFile f(path);
    EXPECT_EQ(f.get_int("llama.block_count"), 2);
    EXPECT_DOUBLE_EQ(f.get_float("llama.block_count"), 2.0);  // an integer where a number is asked
    EXPECT_EQ(f.get_strings("tokenizer.ggml.tokens").size(), 4u);
    EXPECT_EQ(f.get_floats("tokenizer.ggml.scores").size(), 4u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(f.tensor_data(f.header().tensors[0])) % 64, 0u);  // usable in place
    EXPECT_MENTIONS(required_error("a string as an int", [&] { f.get_int("general.architecture"); }),
                    path + ": key 'general.architecture' holds string (expected an integer)");
    EXPECT_MENTIONS(required_error("a missing key", [&] { f.get_string("llama.context_length"); }),
                    "key 'llama.context_length' is missing (expected a string)");
    EXPECT_MENTIONS(required_error("floats as strings", [&] { f.get_strings("tokenizer.ggml.scores"); }),
                    "holds array of f32 (expected an array of strings)");
    EXPECT_MENTIONS(required_error("a bool as a number", [&] { f.get_float("tokenizer.ggml.add_bos_token"); }), "holds bool");
    fs::remove_all(dir);
}

TEST(Gguf, AFifoOrAFolderIsRefusedWithoutBlocking) {
    const fs::path dir = fs::temp_directory_path() / ("mnemo-gguf-fifo-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string fifo = (dir / "model.gguf").string();
    mnemo::test::make_fifo(fifo);
    EXPECT_FALSE(looks_like_gguf(fifo));
    EXPECT_MENTIONS(mnemo::test::error_without_blocking(fifo, [&] { GgufFile f(fifo); }), "model.gguf");
    EXPECT_MENTIONS(required_error("a folder", [&] { GgufFile f(dir.string()); }), dir.string());
    fs::remove_all(dir);
}

TEST(Gguf, HeaderLiesAreNamed) {
    EXPECT_MENTIONS(parse_error("GGU"), "shorter than the magic");
    EXPECT_MENTIONS(parse_error("GGML0000000000000000000000"), "not a GGUF file");
    EXPECT_MENTIONS(parse_error(Image().header(0, 0, 1).b), "version 1");
    EXPECT_MENTIONS(parse_error(Image().header(0, 0, 4).b), "version 4 (expected 2 or 3)");
    EXPECT_MENTIONS(parse_error(Image().header(0, 0, 3u << 24).b), "big-endian");
    EXPECT_MENTIONS(parse_error(Image().header(0, 1ull << 60).b), "announces 1152921504606846976 key/values");
    EXPECT_MENTIONS(parse_error(Image().header(1ull << 40, 0).b), "announces 1099511627776 tensors");
    EXPECT_MENTIONS(parse_error(Image().header(0, 0).b.substr(0, 12)), "inside the tensor count");
    EXPECT_NO_THROW(parse(Image().header(0, 0, 2).b));  // version 2 is read as 3
}

TEST(Gguf, MetadataLiesAreNamed) {
    auto kv = [](uint32_t type) { return Image().header(0, 1).str("llama.x").put<uint32_t>(type); };
    EXPECT_MENTIONS(parse_error(Image().header(0, 1).put<uint64_t>(1ull << 62).b + std::string(16, 'k')), "key/value 0: a key is 4611686018427387904 bytes long");
    EXPECT_MENTIONS(parse_error(Image().header(0, 1).str("").put<uint32_t>(4).put<uint32_t>(1).b), "is empty");
    EXPECT_MENTIONS(parse_error(Image().header(0, 1).str("a\nb").put<uint32_t>(4).put<uint32_t>(1).b), "key 'a\\nb'");
    EXPECT_MENTIONS(parse_error(kv(13).put<uint32_t>(0).b), "key 'llama.x': value type 13 is not a GGUF value type");
    EXPECT_MENTIONS(parse_error(kv(4).b), "key 'llama.x': the file ends at byte");
    EXPECT_MENTIONS(parse_error(kv(8).put<uint64_t>(1000).b + "abc"), "key 'llama.x': the file ends");
    EXPECT_MENTIONS(parse_error(kv(7).put<uint8_t>(2).b), "bool value is 2");
    EXPECT_MENTIONS(parse_error(kv(10).put<uint64_t>(~0ull).b), "u64 value 18446744073709551615");
    EXPECT_MENTIONS(parse_error(kv(9).put<uint32_t>(99).put<uint64_t>(0).b), "array element type 99");
    EXPECT_MENTIONS(parse_error(kv(9).put<uint32_t>(8).put<uint64_t>(1ull << 50).b), "array of 1125899906842624 string values");
    EXPECT_MENTIONS(parse_error(kv(9).put<uint32_t>(6).put<uint64_t>(3).put<float>(1).b), "array of 3 f32 values needs at least 3 x 4 bytes");
    Image deep = kv(9);
    for (int d = 0; d < 9; ++d) deep.put<uint32_t>(9).put<uint64_t>(1);
    EXPECT_MENTIONS(parse_error(deep.b), "nested more than 8 deep");
    Image twice = Image().header(0, 2);
    twice.str("a").put<uint32_t>(4).put<uint32_t>(1).str("a").put<uint32_t>(4).put<uint32_t>(2);
    EXPECT_MENTIONS(parse_error(twice.b), "key 'a': appears twice");
    Image align = Image().header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(48);
    EXPECT_MENTIONS(parse_error(align.b), "key 'general.alignment': 48 is not a power of two");
    Image align_type = Image().header(0, 1).str("general.alignment").put<uint32_t>(5).put<int32_t>(32);
    EXPECT_MENTIONS(parse_error(align_type.b), "is a i32 (expected u32)");
}

TEST(Gguf, TensorInfoLiesAreNamed) {
    auto info = [](const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
        Image i = Image().header(1, 0).str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
        for (const uint64_t d : ne) i.put<uint64_t>(d);
        return i.put<uint32_t>(type).put<uint64_t>(offset);
    };
    auto with_data = [](Image i, size_t bytes) { return i.pad(32).b + std::string(bytes, '\0'); };
    EXPECT_NO_THROW(parse(with_data(info("w", {4}, 0, 0), 16)));  // the base case reads
    EXPECT_MENTIONS(parse_error(with_data(info(std::string(65, 'n'), {4}, 0, 0), 16)), "is not 1..64 printable bytes");
    EXPECT_MENTIONS(parse_error(with_data(info("w", {}, 0, 0), 16)), "tensor 'w': 0 dimensions (expected 1..4)");
    EXPECT_MENTIONS(parse_error(with_data(info("w", {1, 1, 1, 1, 1}, 0, 0), 16)), "5 dimensions");
    EXPECT_MENTIONS(parse_error(with_data(info("w", {4, 0}, 0, 0), 16)), "dimension 1 is 0");
    EXPECT_MENTIONS(parse_error(with_data(info("w", {4}, 4, 0), 16)), "type 4 is not a GGUF tensor type");
    EXPECT_MENTIONS(parse_error(with_data(info("w", {48}, 12, 0), 16)), "innermost dimension 48 is not a multiple of Q4_K's block of 256");
    EXPECT_MENTIONS(parse_error(with_data(info("w", {1ull << 40, 1ull << 40}, 0, 0), 16)), "multiply past 2^63");
    EXPECT_MENTIONS(parse_error(with_data(info("w", {4}, 0, 8), 16)), "offset 8 is not a multiple of the alignment 32");
    EXPECT_MENTIONS(parse_error(with_data(info("w", {4}, 0, 0), 15)), "F32 (0) data of 16 bytes at offset 0 runs past the end of the data section (15 bytes)");
    EXPECT_MENTIONS(parse_error(with_data(info("w", {4}, 0, 1ull << 62), 16)), "runs past the end");
    EXPECT_MENTIONS(parse_error(info("w", {4}, 0, 0).b), "before its data section");
    Image two = Image().header(2, 0);
    two.str("a").put<uint32_t>(1).put<uint64_t>(16).put<uint32_t>(0).put<uint64_t>(0);
    two.str("b").put<uint32_t>(1).put<uint64_t>(16).put<uint32_t>(0).put<uint64_t>(32);
    EXPECT_MENTIONS(parse_error(two.pad(32).b + std::string(96, '\0')), "tensor 'b': its data at offset 32 overlaps tensor 'a'");
    Image same = Image().header(2, 0);
    same.str("a").put<uint32_t>(1).put<uint64_t>(4).put<uint32_t>(0).put<uint64_t>(0);
    same.str("a").put<uint32_t>(1).put<uint64_t>(4).put<uint32_t>(0).put<uint64_t>(32);
    EXPECT_MENTIONS(parse_error(same.pad(32).b + std::string(64, '\0')), "tensor 'a': appears twice");
}

TEST(Gguf, EveryTruncationAndByteFlipIsAnErrorOrAFile) {
    const std::string bytes = Sample().bytes();
    const GgufHeader full = parse(bytes);
    const uint64_t end_of_data = full.data_start + full.tensors[1].offset + full.tensors[1].nbytes;
    for (size_t n = 0; n < end_of_data; ++n) {
        SCOPED_TRACE("first " + std::to_string(n) + " bytes");
        EXPECT_MENTIONS(parse_error(bytes.substr(0, n)), "lie.gguf");
    }
    std::mt19937 rng(7);
    for (int k = 0; k < 4000; ++k) {
        std::string b = bytes;
        b[rng() % full.data_start] ^= static_cast<char>(1u << (rng() % 8));
        try {
            const GgufHeader h = parse(b);
            for (const GgufTensorInfo& t : h.tensors) ASSERT_LE(h.data_start + t.offset + t.nbytes, b.size());
        } catch (const Error& e) {
            ASSERT_TRUE(std::string(e.what()).rfind("lie.gguf: ", 0) == 0) << e.what();
        }
    }
}

// The fuzz target's seeds (tests/fuzz/corpus/gguf/) are files this writer writes; regenerate with
// MNEMO_WRITE_GGUF_SEEDS=1 bin/mnemo_tests --gtest_filter='Gguf.*Seeds*'.
TEST(Gguf, FuzzSeedsAreTheWritersFiles) {
    const fs::path dir = fs::path(MNEMO_SOURCE_DIR) / "tests/fuzz/corpus/gguf";
    std::vector<std::pair<std::string, std::string>> seeds = {
        {"sample.gguf", Sample().bytes()},
        {"vocab_only.gguf", gguf_bytes({{"tokenizer.ggml.model", gguf_string("gpt2")},
                                        {"tokenizer.ggml.tokens", gguf_strings({"a", "b", "ab"})},
                                        {"tokenizer.ggml.merges", gguf_strings({"a b"})}}, {})},
    };
    for (const auto& [name, bytes] : seeds) {
        const fs::path p = dir / name;
        if (std::getenv("MNEMO_WRITE_GGUF_SEEDS")) {
            fs::create_directories(dir);
            std::ofstream(p, std::ios::binary) << bytes;
        }
        std::ifstream in(p, std::ios::binary);
        const std::string committed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        EXPECT_EQ(committed, bytes) << p << " is not what the writer writes now";
        EXPECT_NO_THROW(parse(bytes));
    }
}

// The streaming writer writes what gguf_bytes builds, and refuses a tensor of another size than
// announced, or a commit before every tensor came (then no file is left).
TEST(Gguf, TheStreamingWriterWritesTheSameFileAndChecksWhatComes) {
    const fs::path dir = fs::temp_directory_path() / ("mnemo-gguf-stream-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const Sample s;
    const std::string p = (dir / "s.gguf").string();
    write_gguf(p, s.metadata, s.tensors);
    std::ifstream in(p, std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), s.bytes());
    const std::string q = (dir / "partial.gguf").string();
    {
        GgufWriter w(q, s.metadata, s.tensors);
        EXPECT_MENTIONS(required_error("a short tensor", [&] { w.write_tensor(s.w.data(), 8); }),
                        "tensor 'token_embd.weight': 8 bytes written, 256 announced");
        EXPECT_MENTIONS(required_error("an early commit", [&] { w.commit(); }), "0 of the 2 announced tensors written");
    }
    EXPECT_FALSE(fs::exists(q));
    fs::remove_all(dir);
}
