// A model folder's tokenizer written as GGUF metadata (engine/src/gguf/gguf_tokenizer_export.cpp):
// for every tokenizer fixture and the default model, the folder's tokenizer and a vocab-only GGUF
// of the exported keys give the same ids on the fixture's golden texts (with and without parsing
// special tokens), the same BOS / EOS / add-BOS and the same chat template; and what a GGUF
// vocabulary cannot say is an error naming the file and the field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "fixtures/error_checks.hpp"
#include "gguf/gguf_tokenizer_export.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using mnemo::detail::tokenizer_gguf_metadata;
using mnemo::test::required_error;

namespace {

const std::string kTok = std::string(MNEMO_TEST_DATA) + "/tokenizers/";
const std::string kDefaultModel = std::string(MNEMO_SOURCE_DIR) + "/assets/default-model";

const GgufValue* find(const GgufMetadata& meta, const std::string& key) {
    for (const auto& [k, v] : meta)
        if (k == key) return &v;
    return nullptr;
}

class GgufTokenizerExport : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("mnemo_tok_export_" + std::to_string(getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    // export -> gguf_bytes -> a file of its own.
    std::string exported(const std::string& model_dir, const std::string& name) {
        GgufMetadata meta = {{"general.architecture", gguf_string("llama")}};
        for (auto& kv : tokenizer_gguf_metadata(model_dir)) meta.push_back(std::move(kv));
        const std::string path = (dir_ / name).string();
        std::ofstream(path, std::ios::binary) << gguf_bytes(meta, {});
        return path;
    }
    // A folder of its own holding the given files (name -> text).
    std::string folder(const std::string& name, const std::vector<std::pair<std::string, std::string>>& files) {
        const fs::path d = dir_ / name;
        fs::create_directories(d);
        for (const auto& [file, text] : files) std::ofstream(d / file, std::ios::binary) << text;
        return d.string();
    }
    fs::path dir_;
};

std::vector<std::string> golden_texts(const std::string& golden) {
    const json::Value doc = json::parse_file(golden);
    const json::Value& cases = doc.is_array() ? doc : *doc.find("cases");
    std::vector<std::string> texts;
    for (const json::Value& c : cases.as_array()) texts.push_back(c.find("text")->as_string());
    return texts;
}

std::string read(const std::string& path) { return read_file_capped(path, kMaxTokenizerFileBytes); }

// Lines of a text file (at most `limit`), more texts to compare on.
std::vector<std::string> lines_of(const std::string& path, size_t limit) {
    std::vector<std::string> out;
    std::ifstream in(path);
    for (std::string line; out.size() < limit && std::getline(in, line);) out.push_back(line);
    return out;
}

struct Fixture {
    std::string dir;
    std::string golden;
    std::string corpus;  // lines of text the tokenizer was trained on
    bool sentencepiece;  // the folder's tokenizer needs libsentencepiece
};

TEST_F(GgufTokenizerExport, EveryFixtureTokenizesAsItsFolder) {
    const std::vector<Fixture> fixtures = {
        {kTok + "gpt2_bpe", kTok + "gpt2_bpe_golden.json", kTok + "bpe_train.txt", false},
        {kTok + "llama3_bpe", kTok + "llama3_bpe_golden.json", kTok + "bpe_train.txt", false},
        {kTok + "qwen2_bpe", kTok + "qwen2_bpe_golden.json", kTok + "bpe_train.txt", false},
        {kTok + "sp_gguf", kTok + "sp_gguf_golden.json", kTok + "sp_train.txt", true},
        {kDefaultModel, std::string(MNEMO_TEST_DATA) + "/models/default-model-golden/tokenizer_cases.json",
         std::string(MNEMO_SOURCE_DIR) + "/assets/world/knowledge.txt", false},
    };
    std::string why;
    const bool sp = sentencepiece_supported(&why);
    size_t compared = 0, not_nfc = 0;
    for (const Fixture& f : fixtures) {
        SCOPED_TRACE(f.dir);
        if (f.sentencepiece && !sp) continue;
        const auto folder = load_tokenizer(f.dir);
        const std::string path = exported(f.dir, fs::path(f.dir).filename().string() + ".gguf");
        const auto gguf = load_tokenizer(path);
        ASSERT_EQ(gguf->vocab_size(), folder->vocab_size());
        EXPECT_EQ(gguf->bos_id, folder->bos_id);
        EXPECT_EQ(gguf->eos_id, folder->eos_id);
        EXPECT_EQ(gguf->add_bos, folder->add_bos);
        EXPECT_EQ(gguf->add_eos, folder->add_eos);
        // A GGUF holds one EOS id (plus end-of-turn markers): the others config.json lists are not carried.
        for (int32_t id : gguf->eos_ids) EXPECT_NE(std::find(folder->eos_ids.begin(), folder->eos_ids.end(), id), folder->eos_ids.end()) << id;
        // libsentencepiece decodes the unknown piece as " \u2047 " and does not count it special; a
        // GGUF reader (as llama.cpp) treats the unknown type as a special token with its own text.
        const GgufFile file(path);
        const std::vector<int64_t>& types = file.header().find("tokenizer.ggml.token_type")->ints;
        for (int32_t id = 0; id < folder->vocab_size(); ++id) {
            if (f.sentencepiece && types[id] == 2) continue;
            EXPECT_EQ(gguf->token_bytes(id), folder->token_bytes(id)) << id;
            EXPECT_EQ(gguf->is_special(id), folder->is_special(id)) << id;
        }
        std::string note;
        const ChatTemplate a = detect_chat_template(f.dir, &note), b = detect_chat_template(path, &note);
        EXPECT_EQ(b.name, a.name);
        EXPECT_EQ(b.bos_text, a.bos_text);
        EXPECT_EQ(b.stop_strings, a.stop_strings);

        // A GGUF carries no normalizer: tokenizer.json's NFC (Qwen2) is compared without it on texts NFC changes.
        std::unique_ptr<Tokenizer> without_nfc;
        if (const fs::path tj = fs::path(f.dir) / "tokenizer.json"; fs::exists(tj)) {
            std::string text = read(tj.string());
            const std::string nfc = "\"normalizer\":{\"type\":\"NFC\"}";
            if (const size_t at = text.find(nfc); at != std::string::npos) {
                text.replace(at, nfc.size(), "\"normalizer\":null");
                without_nfc = load_bpe_tokenizer_json(text, tj.string());
            }
        }
        std::vector<std::string> texts = golden_texts(f.golden);
        std::string specials = "x";  // every special token written in a text
        for (int32_t id = 0; id < folder->vocab_size(); ++id)
            if (folder->is_special(id)) specials += folder->token_bytes(id) + " y" + std::to_string(id);
        texts.push_back(specials);
        for (std::string& line : lines_of(f.corpus, 300)) texts.push_back(std::move(line));
        for (const std::string& text : texts)
            for (bool parse_special : {false, true}) {
                SCOPED_TRACE("text " + json::quote(text) + " parse_special " + std::to_string(parse_special));
                const Tokenizer* expected = folder.get();
                if (without_nfc && unicode::nfc(text) != text) {
                    expected = without_nfc.get();
                    ++not_nfc;
                }
                const std::vector<int32_t> ids = gguf->encode(text, parse_special);
                EXPECT_EQ(ids, expected->encode(text, parse_special));
                EXPECT_EQ(gguf->decode(ids, false), expected->decode(ids, false));
                ++compared;
            }
    }
    // 1,104 with the SentencePiece fixtures; the byte-level ones alone (a build without
    // libsentencepiece, such as the sanitizer build) give 974.
    EXPECT_GT(compared, sp ? 1000u : 900u);
    EXPECT_GT(not_nfc, 0u);  // the Qwen2 goldens hold texts NFC changes
}

TEST_F(GgufTokenizerExport, KeysAsLlamaCppWritesThem) {
    struct Case {
        std::string dir, pre, first_merge;
    };
    for (const Case& c : {Case{"gpt2_bpe", "gpt-2", "\xC4\xA0 t"}, Case{"llama3_bpe", "llama-bpe", "\xC4\xA0 t"},
                          Case{"qwen2_bpe", "qwen2", "\xC4\xA0 t"}}) {
        SCOPED_TRACE(c.dir);
        const GgufMetadata meta = tokenizer_gguf_metadata(kTok + c.dir);
        EXPECT_EQ(meta[0].first, "tokenizer.ggml.model");
        EXPECT_EQ(find(meta, "tokenizer.ggml.model")->s, "gpt2");
        EXPECT_EQ(find(meta, "tokenizer.ggml.pre")->s, c.pre);
        EXPECT_EQ(find(meta, "tokenizer.ggml.merges")->strings.at(0), c.first_merge);
        EXPECT_EQ(find(meta, "tokenizer.ggml.scores"), nullptr);
        EXPECT_EQ(find(meta, "tokenizer.ggml.add_space_prefix"), nullptr);
        const GgufValue& types = *find(meta, "tokenizer.ggml.token_type");
        EXPECT_EQ(types.elem, GgufValueType::I32);
        EXPECT_EQ(types.ints.size(), find(meta, "tokenizer.ggml.tokens")->strings.size());
    }
    const GgufMetadata llama3 = tokenizer_gguf_metadata(kTok + "llama3_bpe");
    const std::vector<std::string>& tokens = find(llama3, "tokenizer.ggml.tokens")->strings;
    EXPECT_EQ(tokens.at(375), "<|begin_of_text|>");
    EXPECT_EQ(find(llama3, "tokenizer.ggml.token_type")->ints.at(375), 3);  // control
    EXPECT_EQ(find(llama3, "tokenizer.ggml.bos_token_id")->i, 375);
    EXPECT_EQ(find(llama3, "tokenizer.ggml.eos_token_id")->i, 379);  // tokenizer_config.json's <|eot_id|>
    EXPECT_TRUE(find(llama3, "tokenizer.ggml.add_bos_token")->b);
    EXPECT_NE(find(llama3, "tokenizer.chat_template")->s.find("<|start_header_id|>"), std::string::npos);

    const GgufMetadata sp = tokenizer_gguf_metadata(kTok + "sp_gguf");
    EXPECT_EQ(find(sp, "tokenizer.ggml.model")->s, "llama");
    EXPECT_EQ(find(sp, "tokenizer.ggml.pre"), nullptr);
    EXPECT_EQ(find(sp, "tokenizer.ggml.tokens")->strings.size(), 800u);
    EXPECT_EQ(find(sp, "tokenizer.ggml.scores")->floats.size(), 800u);
    EXPECT_EQ(find(sp, "tokenizer.ggml.scores")->elem, GgufValueType::F32);
    EXPECT_EQ(find(sp, "tokenizer.ggml.unknown_token_id")->i, 0);
    EXPECT_EQ(find(sp, "tokenizer.ggml.bos_token_id")->i, 1);
    EXPECT_EQ(find(sp, "tokenizer.ggml.eos_token_id")->i, 2);
    EXPECT_TRUE(find(sp, "tokenizer.ggml.add_bos_token")->b);
    EXPECT_FALSE(find(sp, "tokenizer.ggml.add_eos_token")->b);
    EXPECT_TRUE(find(sp, "tokenizer.ggml.add_space_prefix")->b);
    EXPECT_EQ(find(sp, "tokenizer.chat_template"), nullptr);
    // The same keys and values as the Python tool writes for the same model (its fixture).
    const GgufFile reference(kTok + "sp_gguf.gguf");
    for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
        SCOPED_TRACE(key);
        const GgufValue& want = *reference.header().find(key);
        EXPECT_EQ(find(sp, key)->strings, want.strings);
        EXPECT_EQ(find(sp, key)->floats, want.floats);
        EXPECT_EQ(find(sp, key)->ints, want.ints);
    }

    // The default model: pieces and scores from tokenizer.model, <|im_start|> / <|im_end|> control
    // tokens as its tokenizer.json says (user-defined in tokenizer.model), its ChatML template.
    const GgufMetadata dm = tokenizer_gguf_metadata(kDefaultModel);
    EXPECT_EQ(find(dm, "tokenizer.ggml.model")->s, "llama");
    EXPECT_EQ(find(dm, "tokenizer.ggml.token_type")->ints.at(3), 3);
    EXPECT_EQ(find(dm, "tokenizer.ggml.token_type")->ints.at(4), 3);
    EXPECT_EQ(find(dm, "tokenizer.ggml.token_type")->ints.at(0), 2);
    const json::Value cfg = json::parse_file(kDefaultModel + "/tokenizer_config.json");
    EXPECT_EQ(find(dm, "tokenizer.chat_template")->s, cfg.find("chat_template")->as_string());
}

TEST_F(GgufTokenizerExport, FolderWithoutTokenizerGivesNoKeys) {
    EXPECT_TRUE(tokenizer_gguf_metadata(std::string(MNEMO_TEST_DATA) + "/models/llama-tiny-f32").empty());
    EXPECT_TRUE(tokenizer_gguf_metadata(folder("empty", {{"config.json", "{\"vocab_size\": 10}"}})).empty());
}

// The vocabulary grows to config.json's vocab_size (the embedding's rows) with unused tokens.
TEST_F(GgufTokenizerExport, PaddedToTheModelsVocabSize) {
    const std::string d = folder("padded", {{"tokenizer.json", read(kTok + "gpt2_bpe/tokenizer.json")},
                                            {"config.json", "{\"vocab_size\": 400}"}});
    const GgufMetadata meta = tokenizer_gguf_metadata(d);
    const std::vector<std::string>& tokens = find(meta, "tokenizer.ggml.tokens")->strings;
    ASSERT_EQ(tokens.size(), 400u);
    EXPECT_EQ(tokens[379], "[PAD379]");
    EXPECT_EQ(tokens[399], "[PAD399]");
    EXPECT_EQ(find(meta, "tokenizer.ggml.token_type")->ints[399], 5);
    const auto folder_tok = load_tokenizer(kTok + "gpt2_bpe");
    const auto gguf = load_tokenizer(exported(d, "padded.gguf"));
    EXPECT_EQ(gguf->vocab_size(), 400);
    for (const std::string& text : golden_texts(kTok + "gpt2_bpe_golden.json"))
        for (bool special : {false, true}) EXPECT_EQ(gguf->encode(text, special), folder_tok->encode(text, special)) << text;
}

// ---- what a GGUF vocabulary cannot say

// A tokenizer.model written here: pieces (text, score, type) and the fields the exporter reads.
struct SpProto {
    static void varint(std::string& out, uint64_t v) {
        while (v >= 0x80) {
            out += static_cast<char>((v & 0x7F) | 0x80);
            v >>= 7;
        }
        out += static_cast<char>(v);
    }
    static void key(std::string& out, uint32_t number, uint32_t wire) { varint(out, (number << 3) | wire); }
    static void bytes(std::string& out, uint32_t number, const std::string& b) {
        key(out, number, 2);
        varint(out, b.size());
        out += b;
    }
    static void number(std::string& out, uint32_t n, int64_t v) {
        key(out, n, 0);
        varint(out, static_cast<uint64_t>(v));
    }
    static std::string model(int64_t model_type, const std::string& normalizer, bool remove_extra, int64_t bos = 1) {
        std::string out;
        const std::vector<std::tuple<std::string, float, int>> pieces = {
            {"<unk>", 0.0f, 2}, {"<s>", 0.0f, 3}, {"</s>", 0.0f, 3}, {"\xE2\x96\x81", -1.0f, 1}, {"a", -2.0f, 1},
            {"b", -3.0f, 1},    {"ab", -0.5f, 1}, {"\xE2\x96\x81" "ab", -0.25f, 1}};
        for (const auto& [text, score, type] : pieces) {
            std::string p;
            bytes(p, 1, text);
            key(p, 2, 5);
            char f[4];
            std::memcpy(f, &score, 4);
            p.append(f, 4);
            number(p, 3, type);
            bytes(out, 1, p);
        }
        std::string trainer;
        number(trainer, 3, model_type);
        number(trainer, 41, bos);
        bytes(out, 2, trainer);
        std::string norm;
        bytes(norm, 1, normalizer);
        number(norm, 4, remove_extra ? 1 : 0);
        bytes(out, 3, norm);
        return out;
    }
};

TEST_F(GgufTokenizerExport, HandWrittenSentencePieceModel) {
    const std::string d = folder("sp", {{"tokenizer.model", SpProto::model(2, "identity", false)}});
    const GgufMetadata meta = tokenizer_gguf_metadata(d);
    EXPECT_EQ(find(meta, "tokenizer.ggml.tokens")->strings.size(), 8u);
    EXPECT_EQ(find(meta, "tokenizer.ggml.scores")->floats.at(7), -0.25);
    EXPECT_EQ(find(meta, "tokenizer.ggml.unknown_token_id")->i, 0);  // the proto's defaults
    EXPECT_EQ(find(meta, "tokenizer.ggml.eos_token_id")->i, 2);
    const auto tok = load_tokenizer(exported(d, "sp.gguf"));
    EXPECT_EQ(tok->encode("ab ab", false), (std::vector<int32_t>{7, 7}));
    EXPECT_EQ(tok->encode("ba", false), (std::vector<int32_t>{3, 5, 4}));
    // A negative bos_id (no BOS) is a 10-byte varint.
    const GgufMetadata no_bos = tokenizer_gguf_metadata(folder("nobos", {{"tokenizer.model", SpProto::model(2, "identity", false, -1)}}));
    EXPECT_EQ(find(no_bos, "tokenizer.ggml.bos_token_id"), nullptr);
    EXPECT_FALSE(find(no_bos, "tokenizer.ggml.add_bos_token")->b);
}

TEST_F(GgufTokenizerExport, WhatGgufCannotSayIsAnErrorNamingFileAndField) {
    struct Refusal {
        std::string what;
        std::string dir;
        std::vector<std::string> mentions;
    };
    const std::string gpt2 = read(kTok + "gpt2_bpe/tokenizer.json");
    const std::string qwen2 = read(kTok + "qwen2_bpe/tokenizer.json");
    auto replaced = [](std::string text, const std::string& from, const std::string& to) {
        const size_t at = text.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        if (at != std::string::npos) text.replace(at, from.size(), to);
        return text;
    };
    const std::string model = SpProto::model(2, "identity", false);
    const std::vector<Refusal> refusals = {
        // sp_tiny collapses runs of whitespace: no GGUF reader does.
        {"sp_tiny", kTok + "sp_tiny", {"sp_tiny/tokenizer.model", "normalizer_spec.remove_extra_whitespaces"}},
        {"unigram", folder("unigram", {{"tokenizer.model", SpProto::model(1, "identity", false)}}),
         {"unigram/tokenizer.model", "trainer_spec.model_type", "unigram"}},
        {"nfkc", folder("nfkc", {{"tokenizer.model", SpProto::model(2, "nmt_nfkc", false)}}),
         {"nfkc/tokenizer.model", "normalizer_spec.name", "nmt_nfkc"}},
        {"truncated", folder("truncated", {{"tokenizer.model", model.substr(0, model.size() - 3)}}),
         {"truncated/tokenizer.model", "ModelProto", "past the end"}},
        {"no split", folder("nosplit", {{"tokenizer.json", replaced(gpt2, "\"use_regex\":true},\"post", "\"use_regex\":false},\"post")}}),
         {"nosplit/tokenizer.json", "pre_tokenizer", "split pattern"}},
        {"prefix space", folder("prefix", {{"tokenizer.json", replaced(gpt2, "\"add_prefix_space\":false", "\"add_prefix_space\":true")}}),
         {"prefix/tokenizer.json", "add_prefix_space"}},
        {"qwen2 ignoring merges", folder("qwen_im", {{"tokenizer.json", replaced(qwen2, "\"ignore_merges\":false", "\"ignore_merges\":true")}}),
         {"qwen_im/tokenizer.json", "model.ignore_merges", "\\p{N}"}},
        {"Mnemo refuses it", folder("bad_split", {{"tokenizer.json", replaced(gpt2, "\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true}", "\"type\":\"Whitespace\"}")}}),
         {"bad_split/tokenizer.json", "pre_tokenizer", "Whitespace"}},
        {"Metaspace without tokenizer.model", folder("metaspace", {{"tokenizer.json", read(kDefaultModel + "/tokenizer.json")}}),
         {"metaspace/tokenizer.json", "tokenizer.model", "scores"}},
        {"files that disagree", folder("disagree", {{"tokenizer.json", replaced(read(kDefaultModel + "/tokenizer.json"), "\"content\": \"<|im_end|>\"", "\"content\": \"<|end|>\"")},
                                                    {"tokenizer.model", read(kDefaultModel + "/tokenizer.model")}}),
         {"disagree/tokenizer.json", "added_tokens[4]", "<|end|>", "<|im_end|>", "disagree/tokenizer.model"}},
        {"bos out of range", folder("bos", {{"tokenizer.model", model}, {"config.json", "{\"bos_token_id\": 8}"}}),
         {"bos/config.json", "bos_token_id", "token id 8", "[0, 8)"}},
        {"eos not a token", folder("eos", {{"tokenizer.model", model}, {"tokenizer_config.json", "{\"eos_token\": \"<eos>\"}"}}),
         {"eos/tokenizer_config.json", "eos_token", "<eos>"}},
        {"chat template", folder("ct", {{"tokenizer.model", model}, {"tokenizer_config.json", "{\"chat_template\": 3}"}}),
         {"ct/tokenizer_config.json", "chat_template"}},
    };
    for (const Refusal& r : refusals) {
        SCOPED_TRACE(r.what);
        const std::string message = required_error(r.what, [&] { tokenizer_gguf_metadata(r.dir); });
        for (const std::string& m : r.mentions) EXPECT_MENTIONS(message, m);
    }
}

}  // namespace
