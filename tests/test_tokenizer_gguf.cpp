// Tokenizers from GGUF metadata (engine/src/tokenizer/gguf_vocab.cpp):
//   * "llama" (SentencePiece) vocabularies against libsentencepiece: goldens of our own texts and
//     a live comparison on the corpus and random texts;
//   * "gpt2" vocabularies made here from the repository's tokenizer.json fixtures against the
//     tokenizer.json loader on the same texts;
//   * the split sequences of tokenizer.ggml.pre against Python's regex module;
//   * every malformed key as an error naming the file and the key.
// Regenerate the SentencePiece fixture and the goldens (repository root, Debian python3 with
// python3-sentencepiece and python3-regex):
//     /usr/bin/python3 tools/reference/gguf_tokenizer_reference.py tests/data/tokenizers
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "fixtures/error_checks.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "tokenizer/pretokenize.hpp"

namespace fs = std::filesystem;
using namespace mnemo;
using mnemo::test::mentions;
using mnemo::test::required_error;

namespace {

const std::string kDir = std::string(MNEMO_TEST_DATA) + "/tokenizers/";
const std::string kSpGguf = kDir + "sp_gguf.gguf";
const std::string kMeta = "\xE2\x96\x81";  // U+2581

std::vector<int32_t> ids_of(const json::Value& list) {
    std::vector<int32_t> out;
    for (const auto& v : list.as_array()) out.push_back(static_cast<int32_t>(v.as_int()));
    return out;
}

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
    std::vector<int32_t> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

// A folder of its own per test, removed at the end.
class TokenizerGgufFiles : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("mnemo_tok_gguf_" + std::to_string(getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string write(const std::string& name, const GgufMetadata& meta) {
        const std::string path = (dir_ / name).string();
        write_gguf(path, meta, {});
        return path;
    }
    fs::path dir_;
};

// The metadata of a GGUF file as a writable list (to make variants of a fixture).
GgufMetadata metadata_of(const std::string& path) {
    const GgufFile f(path);
    return f.header().metadata;
}

void set(GgufMetadata& meta, const std::string& key, GgufValue v) {
    for (auto& [k, value] : meta)
        if (k == key) {
            value = std::move(v);
            return;
        }
    meta.emplace_back(key, std::move(v));
}

void drop_key(GgufMetadata& meta, const std::string& key) {
    meta.erase(std::remove_if(meta.begin(), meta.end(), [&](const auto& kv) { return kv.first == key; }), meta.end());
}

// ---- SentencePiece ("llama") ----

TEST(TokenizerGguf, SentencePieceMatchesGoldens) {
    const auto tok = load_tokenizer(kSpGguf);  // a vocab-only GGUF file, not a folder
    const json::Value golden = json::parse_file(kDir + "sp_gguf_golden.json");
    EXPECT_EQ(tok->vocab_size(), golden.find("vocab_size")->as_int());
    EXPECT_EQ(tok->bos_id, golden.find("bos_id")->as_int());
    EXPECT_EQ(tok->eos_id, golden.find("eos_id")->as_int());
    EXPECT_TRUE(tok->add_bos);
    EXPECT_FALSE(tok->add_eos);
    size_t checked = 0, byte_tokens = 0;
    for (const auto& c : golden.find("cases")->as_array()) {
        const std::string& text = c.find("text")->as_string();
        SCOPED_TRACE("text: '" + text + "'");
        const std::vector<int32_t> expected = ids_of(*c.find("ids"));
        EXPECT_EQ(tok->encode(text, false), expected);
        if (text.find("<s>") == std::string::npos) {  // the only golden that writes special tokens
            EXPECT_EQ(tok->encode(text, true), expected);
        }
        EXPECT_EQ(tok->decode(expected, true), c.find("decoded")->as_string());
        const auto& pieces = c.find("pieces")->as_array();
        ASSERT_EQ(pieces.size(), expected.size());
        for (size_t i = 0; i < pieces.size(); ++i) {
            EXPECT_EQ(tok->token_id(pieces[i].as_string()), expected[i]);
            byte_tokens += pieces[i].as_string().starts_with("<0x");
        }
        ++checked;
    }
    EXPECT_GE(checked, 25u);
    EXPECT_GT(byte_tokens, 50u);  // the goldens exercise byte fallback
}

// The same model through libsentencepiece and through its GGUF, on every line and paragraph of
// the corpus and on random texts over an alphabet with spaces, newlines, digits, accents, CJK and
// characters the vocabulary lacks: the ids must be identical and decode must give the text back.
TEST(TokenizerGguf, SentencePieceIdenticalToLibSentencePiece) {
    if (std::string why; !sentencepiece_supported(&why)) GTEST_SKIP() << why;
    const auto gguf = load_tokenizer(kSpGguf);
    const auto spm = load_sentencepiece(kDir + "sp_gguf/tokenizer.model");
    ASSERT_EQ(gguf->vocab_size(), spm->vocab_size());

    std::vector<std::string> texts;
    std::vector<std::string> files = {kDir + "sp_train.txt", kDir + "bpe_train.txt"};
    for (const auto& e : fs::directory_iterator(std::string(MNEMO_SOURCE_DIR) + "/assets/corpus"))
        if (e.path().extension() == ".txt") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
        const std::string all = read_file_capped(file, kMaxDocumentFileBytes);
        texts.push_back(all);
        for (size_t pos = 0; pos < all.size();) {
            size_t end = all.find('\n', pos);
            if (end == std::string::npos) end = all.size();
            texts.push_back(all.substr(pos, end - pos));
            pos = end + 1;
        }
    }
    const std::vector<std::string> alphabet = {
        "a", "e", "t", "h", "n", "o", "r", "s", " ", " ", " ", "  ", "\n", "\t", "0", "1", "8", "9", ".",
        ",", "'", "(", "é", "ü", "ß", "ç", "東", "京", "語", "🙂", "☃", "ŋ", "the", "and", "ing", "▁", "\r\n"};
    std::mt19937 rng(25);
    for (int i = 0; i < 1000; ++i) {
        std::string t;
        const int n = 1 + static_cast<int>(rng() % 24);
        for (int k = 0; k < n; ++k) t += alphabet[rng() % alphabet.size()];
        texts.push_back(t);
    }

    size_t identical = 0, round_trips = 0, tokens = 0;
    for (const std::string& text : texts) {
        const auto a = gguf->encode(text, false);
        const auto b = spm->encode(text, false);
        tokens += b.size();
        if (a == b) ++identical;
        else ADD_FAILURE() << "text '" << text << "': GGUF and libsentencepiece ids differ";
        // A literal U+2581 in the text decodes as a space, in SentencePiece as here.
        std::string back;
        for (size_t pos = 0; pos < text.size();) {
            const bool meta = text.compare(pos, kMeta.size(), kMeta) == 0;
            back.push_back(meta ? ' ' : text[pos]);
            pos += meta ? kMeta.size() : 1;
        }
        if (gguf->decode(a, true) == back) ++round_trips;
        else ADD_FAILURE() << "text '" << text << "' decodes to '" << gguf->decode(a, true) << "'";
    }
    std::printf("[ measured ] %zu of %zu texts (%zu tokens) identical to libsentencepiece, %zu round trips\n",
                identical, texts.size(), tokens, round_trips);
    EXPECT_GT(texts.size(), 1200u);
}

// Control tokens are special (parsed only with parse_special), the user-defined <tool> is matched
// always, and the text after any of them gets its own U+2581 prefix (llama.cpp's reading of
// tokenizer.ggml.add_space_prefix: every text fragment after a token starts a word).
TEST(TokenizerGguf, SentencePieceSpecialAndUserDefinedTokens) {
    const auto tok = load_tokenizer(kSpGguf);
    const auto start = tok->token_id("<|im_start|>"), end = tok->token_id("<|im_end|>"), tool = tok->token_id("<tool>");
    ASSERT_TRUE(start && end && tool);
    EXPECT_TRUE(tok->is_special(*start));
    EXPECT_TRUE(tok->is_special(*tok->bos_id));
    EXPECT_FALSE(tok->is_special(*tool));
    EXPECT_EQ(tok->token_bytes(*tok->bos_id), "<s>");
    EXPECT_EQ(tok->token_bytes(*tool), "<tool>");
    EXPECT_EQ(tok->token_bytes(*tok->token_id(kMeta + "the")), " the");
    EXPECT_EQ(tok->token_bytes(*tok->token_id("<0x0A>")), "\n");

    EXPECT_EQ(tok->encode("<|im_start|>user\nhi<|im_end|>", true),
              concat({{*start}, tok->encode("user\nhi", false), {*end}}));
    const auto plain = tok->encode("<|im_start|>user", false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), *start), 0);
    EXPECT_EQ(tok->encode("a<tool>b", false), concat({tok->encode("a", false), {*tool}, tok->encode("b", false)}));
    EXPECT_EQ(tok->encode("</s>", true), std::vector<int32_t>{*tok->eos_id});
    EXPECT_EQ(tok->decode(tok->encode("<|im_start|>hi<|im_end|>", true), true), "hi");
    EXPECT_NE(std::find(tok->eos_ids.begin(), tok->eos_ids.end(), *tok->eos_id), tok->eos_ids.end());
}

TEST_F(TokenizerGgufFiles, SentencePieceFlagsFromMetadata) {
    const auto with_prefix = load_tokenizer(kSpGguf);
    // <|im_end|> ends generation already (a chat end marker); <|im_start|> becomes an end token here.
    const int32_t im_start = with_prefix->token_id("<|im_start|>").value();
    EXPECT_EQ(std::find(with_prefix->eos_ids.begin(), with_prefix->eos_ids.end(), im_start), with_prefix->eos_ids.end());
    GgufMetadata meta = metadata_of(kSpGguf);
    set(meta, "tokenizer.ggml.add_space_prefix", gguf_bool(false));
    set(meta, "tokenizer.ggml.add_bos_token", gguf_bool(false));
    set(meta, "tokenizer.ggml.add_eos_token", gguf_bool(true));
    set(meta, "tokenizer.ggml.eot_token_id", gguf_u32(static_cast<uint32_t>(im_start)));
    const auto tok = load_tokenizer(write("flags.gguf", meta));
    EXPECT_FALSE(tok->add_bos);
    EXPECT_TRUE(tok->add_eos);
    EXPECT_NE(std::find(tok->eos_ids.begin(), tok->eos_ids.end(), im_start), tok->eos_ids.end());
    const auto ids = tok->encode("the river", false);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(tok->token_bytes(ids[0]).substr(0, 1), "t");  // no space in front
    EXPECT_EQ(with_prefix->token_bytes(with_prefix->encode("the river", false)[0]).substr(0, 1), " ");
    EXPECT_EQ(tok->decode(ids, true), "the river");
}

TEST_F(TokenizerGgufFiles, ChatTemplateFromMetadata) {
    std::string note;
    const ChatTemplate t = detect_chat_template(kSpGguf, &note);
    EXPECT_EQ(t.format, ChatFormat::ChatML);
    EXPECT_EQ(note, "");
    GgufMetadata meta = metadata_of(kSpGguf);
    drop_key(meta, "tokenizer.chat_template");
    const std::string path = write("no-template.gguf", meta);
    EXPECT_EQ(detect_chat_template(path, &note).format, ChatFormat::Plain);
    EXPECT_TRUE(mentions(note, "tokenizer.chat_template")) << note;
    set(meta, "tokenizer.chat_template", gguf_string("[INST] {{ bos_token }}"));
    const ChatTemplate llama2 = detect_chat_template(write("llama2.gguf", meta), &note);
    EXPECT_EQ(llama2.format, ChatFormat::Llama2);
    EXPECT_EQ(llama2.bos_text, "<s>");  // the text of tokenizer.ggml.bos_token_id
    EXPECT_EQ(llama2.stop_strings, std::vector<std::string>{"</s>"});
}

// ---- byte-level BPE ("gpt2") ----

// A vocab-only GGUF with what llama.cpp's converter writes for a tokenizer.json: the tokens by id,
// normal (1) for the vocabulary, control (3) for special added tokens, user-defined (4) for the
// others, the merges as "left right".
GgufMetadata gguf_from_tokenizer_json(const std::string& json_path, const std::string& pre) {
    const json::Value doc = json::parse_file(json_path);
    const json::Value& model = *doc.find("model");
    std::vector<std::string> tokens;
    std::vector<int64_t> types;
    auto put = [&](int64_t id, const std::string& text, int64_t type) {
        if (static_cast<size_t>(id) >= tokens.size()) {
            tokens.resize(id + 1);
            types.resize(id + 1, 1);
        }
        tokens[id] = text;
        types[id] = type;
    };
    for (const auto& [piece, id] : model.find("vocab")->as_object()) put(id.as_int(), piece, 1);
    if (const json::Value* added = doc.find("added_tokens"))
        for (const auto& a : added->as_array())
            put(a.find("id")->as_int(), a.find("content")->as_string(), a.find("special")->as_bool() ? 3 : 4);
    std::vector<std::string> merges;
    for (const auto& m : model.find("merges")->as_array())
        merges.push_back(m.is_string() ? m.as_string() : m.as_array()[0].as_string() + " " + m.as_array()[1].as_string());
    GgufMetadata meta = {{"general.architecture", gguf_string("llama")},
                         {"tokenizer.ggml.model", gguf_string("gpt2")},
                         {"tokenizer.ggml.pre", gguf_string(pre)},
                         {"tokenizer.ggml.tokens", gguf_strings(tokens)},
                         {"tokenizer.ggml.token_type", gguf_ints(GgufValueType::I32, types)},
                         {"tokenizer.ggml.merges", gguf_strings(merges)}};
    return meta;
}

// Same ids as the tokenizer.json loader on the goldens' texts, with and without parse_special.
// llama.cpp (and so a GGUF) has no normalizer: Qwen2's NFC is left out of the tokenizer.json it is
// compared with.
TEST_F(TokenizerGgufFiles, ByteLevelMatchesTokenizerJson) {
    struct Case {
        const char* name;
        const char* pre;
    };
    for (const Case c : {Case{"gpt2_bpe", "gpt-2"}, Case{"llama3_bpe", "llama-bpe"}, Case{"qwen2_bpe", "qwen2"}}) {
        SCOPED_TRACE(c.name);
        const std::string json_path = kDir + c.name + "/tokenizer.json";
        std::string text = read_file_capped(json_path, kMaxTokenizerFileBytes);
        const std::string nfc = "\"normalizer\":{\"type\":\"NFC\"}";
        if (const size_t at = text.find(nfc); at != std::string::npos) text.replace(at, nfc.size(), "\"normalizer\":null");
        const auto expected = load_bpe_tokenizer_json(text, json_path);
        const auto tok = load_tokenizer(write(std::string(c.name) + ".gguf", gguf_from_tokenizer_json(json_path, c.pre)));
        EXPECT_EQ(tok->vocab_size(), expected->vocab_size());
        size_t checked = 0;
        const json::Value golden = json::parse_file(kDir + c.name + "_golden.json");
        for (const auto& g : golden.find("cases")->as_array()) {
            const std::string& t = g.find("text")->as_string();
            const bool special = g.find("parse_special")->as_bool();
            SCOPED_TRACE("text '" + t + "' parse_special " + std::to_string(special));
            const auto ids = tok->encode(t, special);
            EXPECT_EQ(ids, expected->encode(t, special));
            EXPECT_EQ(tok->decode(ids, false), expected->decode(ids, false));
            ++checked;
        }
        EXPECT_GT(checked, 30u);
        for (int32_t id = 0; id < tok->vocab_size(); ++id) {
            EXPECT_EQ(tok->token_bytes(id), expected->token_bytes(id)) << id;
            EXPECT_EQ(tok->is_special(id), expected->is_special(id)) << id;
        }
    }
}

TEST_F(TokenizerGgufFiles, ByteLevelBosAndEosFromMetadata) {
    GgufMetadata meta = gguf_from_tokenizer_json(kDir + "llama3_bpe/tokenizer.json", "llama-bpe");
    set(meta, "tokenizer.ggml.bos_token_id", gguf_u32(375));
    set(meta, "tokenizer.ggml.eos_token_id", gguf_u32(376));
    set(meta, "tokenizer.ggml.eot_token_id", gguf_u32(379));
    auto tok = load_tokenizer(write("llama3.gguf", meta));
    EXPECT_EQ(tok->bos_id, 375);
    EXPECT_TRUE(tok->add_bos);  // llama.cpp's default for the Llama-3 pre-tokenizer
    EXPECT_EQ(tok->eos_ids, (std::vector<int32_t>{376, 379}));
    set(meta, "tokenizer.ggml.add_bos_token", gguf_bool(false));
    tok = load_tokenizer(write("llama3-nobos.gguf", meta));
    EXPECT_FALSE(tok->add_bos);
    set(meta, "tokenizer.ggml.pre", gguf_string("gpt-2"));
    drop_key(meta, "tokenizer.ggml.add_bos_token");
    EXPECT_FALSE(load_tokenizer(write("gpt2.gguf", meta))->add_bos);
}

// Each name llama.cpp writes maps to a pre-tokenizer; the split sequences against Python's regex.
TEST_F(TokenizerGgufFiles, PreTokenizerNames) {
    GgufMetadata meta = gguf_from_tokenizer_json(kDir + "gpt2_bpe/tokenizer.json", "gpt-2");
    for (const char* name : {"default", "gpt-2", "mpt", "olmo", "jais", "llama3", "llama-v3", "llama-bpe", "dbrx",
                             "smaug-bpe", "qwen2", "stablelm2", "starcoder", "refact", "command-r", "smollm",
                             "codeshell", "falcon", "deepseek-coder"}) {
        set(meta, "tokenizer.ggml.pre", gguf_string(name));
        const auto tok = load_tokenizer(write(std::string("pre-") + name + ".gguf", meta));
        EXPECT_EQ(tok->decode(tok->encode("It's 12345 apples, 東京!", false), false), "It's 12345 apples, 東京!") << name;
    }
    // starcoder isolates every digit; gpt-2 keeps " 12345" one word.
    set(meta, "tokenizer.ggml.pre", gguf_string("starcoder"));
    EXPECT_EQ(load_tokenizer(write("starcoder.gguf", meta))->encode("12345", false).size(), 5u);
    drop_key(meta, "tokenizer.ggml.pre");  // missing: llama.cpp's "default"
    EXPECT_EQ(load_tokenizer(write("no-pre.gguf", meta))->vocab_size(), 379);
}

TEST(TokenizerGguf, PreTokenizerSequencesMatchReference) {
    using tokenizer_detail::SplitPattern;
    const json::Value golden = json::parse_file(kDir + "pretokenize_golden.json");
    const std::pair<const char*, SplitPattern> patterns[] = {{"default", SplitPattern::Default},
                                                             {"starcoder", SplitPattern::Starcoder},
                                                             {"falcon", SplitPattern::Falcon},
                                                             {"deepseek-coder", SplitPattern::DeepseekCoder}};
    size_t checked = 0;
    for (const auto& c : golden.find("cases")->as_array()) {
        const std::string& pre = c.find("pre")->as_string();
        const std::string& text = c.find("text")->as_string();
        SCOPED_TRACE(pre + ": '" + text + "'");
        const auto* p = std::find_if(std::begin(patterns), std::end(patterns), [&](const auto& x) { return pre == x.first; });
        ASSERT_NE(p, std::end(patterns));
        std::vector<std::string> expected, got;
        for (const auto& piece : c.find("pieces")->as_array()) expected.push_back(piece.as_string());
        for (std::string_view w : tokenizer_detail::split_words(text, p->second)) got.emplace_back(w);
        EXPECT_EQ(got, expected);
        ++checked;
    }
    EXPECT_GE(checked, 100u);
}

// ---- malformed metadata ----

// A small valid "llama" vocabulary: <unk> <s> </s> ▁ a b ▁a ab <0x41>.
GgufMetadata small_spm() {
    return {{"tokenizer.ggml.model", gguf_string("llama")},
            {"tokenizer.ggml.tokens", gguf_strings({"<unk>", "<s>", "</s>", kMeta, "a", "b", kMeta + "a", "ab", "<0x41>"})},
            {"tokenizer.ggml.scores", gguf_f32s({0, 0, 0, -1, -2, -3, -0.5f, -0.25f, 0})},
            {"tokenizer.ggml.token_type", gguf_ints(GgufValueType::I32, {2, 3, 3, 1, 1, 1, 1, 1, 6})},
            {"tokenizer.ggml.bos_token_id", gguf_u32(1)},
            {"tokenizer.ggml.eos_token_id", gguf_u32(2)},
            {"tokenizer.ggml.unknown_token_id", gguf_u32(0)}};
}

GgufMetadata small_gpt2() {
    return {{"tokenizer.ggml.model", gguf_string("gpt2")},
            {"tokenizer.ggml.pre", gguf_string("gpt-2")},
            {"tokenizer.ggml.tokens", gguf_strings({"a", "b", "ab", "\xC4\xA0", "<|endoftext|>"})},
            {"tokenizer.ggml.token_type", gguf_ints(GgufValueType::I32, {1, 1, 1, 1, 3})},
            {"tokenizer.ggml.merges", gguf_strings({"a b"})},
            {"tokenizer.ggml.eos_token_id", gguf_u32(4)}};
}

TEST_F(TokenizerGgufFiles, SmallVocabulariesLoad) {
    const auto spm = load_tokenizer(write("spm.gguf", small_spm()));
    // "▁aab": ab (-0.25) merges before ▁a (-0.5); "aa" is no piece.
    EXPECT_EQ(spm->encode("aab", false), (std::vector<int32_t>{6, 7}));
    EXPECT_EQ(spm->encode("A", false), (std::vector<int32_t>{3, 8}));   // ▁ then byte fallback <0x41>
    EXPECT_EQ(spm->encode("c", false), (std::vector<int32_t>{3, 0}));   // no byte token for 'c': <unk>
    const auto gpt2 = load_tokenizer(write("gpt2.gguf", small_gpt2()));
    EXPECT_EQ(gpt2->encode("ab", false), std::vector<int32_t>{2});
    EXPECT_EQ(gpt2->encode("<|endoftext|>", true), std::vector<int32_t>{4});
    EXPECT_EQ(gpt2->eos_ids, std::vector<int32_t>{4});
}

// Ties between equal scores go to the leftmost pair, as in llama.cpp and SentencePiece.
TEST_F(TokenizerGgufFiles, SentencePieceEqualScoresMergeLeftmostFirst) {
    GgufMetadata meta = {{"tokenizer.ggml.model", gguf_string("llama")},
                         {"tokenizer.ggml.add_space_prefix", gguf_bool(false)},
                         {"tokenizer.ggml.tokens", gguf_strings({"a", "b", "ab", "ba"})},
                         {"tokenizer.ggml.scores", gguf_f32s({0, 0, -1, -1})},
                         {"tokenizer.ggml.token_type", gguf_ints(GgufValueType::I32, {1, 1, 1, 1})}};
    auto tok = load_tokenizer(write("tie.gguf", meta));
    EXPECT_EQ(tok->encode("aba", false), (std::vector<int32_t>{2, 0}));   // ab|a, not a|ba
    EXPECT_EQ(tok->encode("bab", false), (std::vector<int32_t>{3, 1}));   // ba|b
    set(meta, "tokenizer.ggml.scores", gguf_f32s({0, 0, -2, -1}));        // now ba wins
    tok = load_tokenizer(write("ba.gguf", meta));
    EXPECT_EQ(tok->encode("aba", false), (std::vector<int32_t>{0, 3}));
}

TEST_F(TokenizerGgufFiles, MalformedMetadataNamesFileAndKey) {
    struct Lie {
        const char* what;
        GgufMetadata meta;
        std::vector<std::string> mentions;
    };
    auto with = [](GgufMetadata m, const std::string& key, GgufValue v) {
        set(m, key, std::move(v));
        return m;
    };
    auto without = [](GgufMetadata m, const std::string& key) {
        drop_key(m, key);
        return m;
    };
    const GgufMetadata spm = small_spm(), gpt2 = small_gpt2();
    // "a", "aa", ... 1200 a's: every split of every piece is a merge, ~N^3 bytes to look up.
    std::vector<std::string> runs;
    for (size_t n = 1; n <= 1200; ++n) runs.push_back(std::string(n, 'a'));
    const GgufMetadata long_pieces = {{"tokenizer.ggml.model", gguf_string("llama")},
                                      {"tokenizer.ggml.tokens", gguf_strings(runs)},
                                      {"tokenizer.ggml.scores", gguf_f32s(std::vector<float>(runs.size(), 0.0f))}};
    const std::vector<Lie> lies = {
        {"pieces splitting into too many merges", long_pieces, {"tokenizer.ggml.tokens", "split into more than"}},
        {"no model", without(spm, "tokenizer.ggml.model"), {"tokenizer.ggml.model", "missing"}},
        {"bert", with(spm, "tokenizer.ggml.model", gguf_string("bert")), {"tokenizer.ggml.model", "'bert'", "'llama'", "'gpt2'"}},
        {"model not a string", with(spm, "tokenizer.ggml.model", gguf_u32(1)), {"tokenizer.ggml.model", "string"}},
        {"no tokens", without(spm, "tokenizer.ggml.tokens"), {"tokenizer.ggml.tokens", "missing"}},
        {"empty tokens", with(spm, "tokenizer.ggml.tokens", gguf_strings({})), {"tokenizer.ggml.tokens", "empty"}},
        {"tokens not strings", with(spm, "tokenizer.ggml.tokens", gguf_ints(GgufValueType::I32, {1, 2})),
         {"tokenizer.ggml.tokens", "array of strings"}},
        {"no scores", without(spm, "tokenizer.ggml.scores"), {"tokenizer.ggml.scores", "missing"}},
        {"short scores", with(spm, "tokenizer.ggml.scores", gguf_f32s({0, 0})), {"tokenizer.ggml.scores", "2 entries", "9 tokens"}},
        {"NaN score", with(spm, "tokenizer.ggml.scores", gguf_f32s({0, 0, 0, NAN, 0, 0, 0, 0, 0})),
         {"tokenizer.ggml.scores", "entry 3", "NaN"}},
        {"gpt2 scores", with(gpt2, "tokenizer.ggml.scores", gguf_f32s({0})), {"tokenizer.ggml.scores", "1 entries"}},
        {"long types", with(spm, "tokenizer.ggml.token_type", gguf_ints(GgufValueType::I32, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1})),
         {"tokenizer.ggml.token_type", "10 entries"}},
        {"type 7", with(spm, "tokenizer.ggml.token_type", gguf_ints(GgufValueType::I32, {2, 3, 3, 1, 7, 1, 1, 1, 6})),
         {"tokenizer.ggml.token_type", "entry 4", "is 7", "6 (byte)"}},
        {"type 0", with(gpt2, "tokenizer.ggml.token_type", gguf_ints(GgufValueType::I32, {0, 1, 1, 1, 3})),
         {"tokenizer.ggml.token_type", "entry 0"}},
        {"bos out of range", with(spm, "tokenizer.ggml.bos_token_id", gguf_u32(9)),
         {"tokenizer.ggml.bos_token_id", "token id 9", "[0, 9)"}},
        {"eos out of range", with(gpt2, "tokenizer.ggml.eos_token_id", gguf_int(GgufValueType::I32, -1)),
         {"tokenizer.ggml.eos_token_id", "token id -1"}},
        {"unk out of range", with(spm, "tokenizer.ggml.unknown_token_id", gguf_u32(100)), {"tokenizer.ggml.unknown_token_id", "100"}},
        {"eot out of range", with(spm, "tokenizer.ggml.eot_token_id", gguf_u32(100)), {"tokenizer.ggml.eot_token_id", "100"}},
        {"bos not an integer", with(spm, "tokenizer.ggml.bos_token_id", gguf_string("1")), {"tokenizer.ggml.bos_token_id", "integer"}},
        {"add_bos not a bool", with(spm, "tokenizer.ggml.add_bos_token", gguf_u32(1)), {"tokenizer.ggml.add_bos_token", "bool"}},
        {"no merges", without(gpt2, "tokenizer.ggml.merges"), {"tokenizer.ggml.merges", "missing"}},
        {"merge of unknown piece", with(gpt2, "tokenizer.ggml.merges", gguf_strings({"a b", "a c"})),
         {"tokenizer.ggml.merges", "entry 1", "'c'", "not in tokenizer.ggml.tokens"}},
        {"merge without space", with(gpt2, "tokenizer.ggml.merges", gguf_strings({"ab"})),
         {"tokenizer.ggml.merges", "entry 0", "two pieces"}},
        {"merge result unknown", with(gpt2, "tokenizer.ggml.merges", gguf_strings({"b a"})),
         {"tokenizer.ggml.merges", "'ba'", "not in tokenizer.ggml.tokens"}},
        {"deepseek-llm", with(gpt2, "tokenizer.ggml.pre", gguf_string("deepseek-llm")),
         {"tokenizer.ggml.pre", "'deepseek-llm'", "not supported", "llama-bpe", "qwen2", "starcoder"}},
        {"unknown pre", with(gpt2, "tokenizer.ggml.pre", gguf_string("\x1b[2Jmystery")),
         {"tokenizer.ggml.pre", "'\\e[2Jmystery'"}},
        {"only special tokens", with(gpt2, "tokenizer.ggml.token_type", gguf_ints(GgufValueType::I32, {3, 3, 3, 3, 3})),
         {"none of them for text"}},
    };
    for (size_t i = 0; i < lies.size(); ++i) {
        SCOPED_TRACE(lies[i].what);
        const std::string path = write("lie" + std::to_string(i) + ".gguf", lies[i].meta);
        const std::string e = required_error(lies[i].what, [&] { load_tokenizer(path); });
        EXPECT_TRUE(mentions(e, path)) << e;
        for (const std::string& part : lies[i].mentions) EXPECT_TRUE(mentions(e, part)) << part << " not in: " << e;
    }
}

}  // namespace
