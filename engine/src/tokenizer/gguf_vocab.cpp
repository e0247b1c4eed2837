// Tokenizers from a GGUF file's metadata (tokenizer.ggml.*), so that a vocab-only GGUF is enough
// to tokenize. Two vocabularies, both run by BpeTokenizer:
//   * "llama": SentencePiece pieces with scores. Text gets U+2581 for every space and one in
//     front; symbols start as UTF-8 characters and the adjacent pair whose concatenation is a
//     piece with the highest score merges first, the leftmost on a tie (llama.cpp's SPM tokenizer,
//     libsentencepiece's BPE model). Expressed as BPE merges: every split of a normal piece into
//     two normal pieces is a merge ranked by the piece's score, equal scores sharing one rank.
//     Characters without a piece become their <0xNN> byte tokens, else the unknown token.
//   * "gpt2": byte-level BPE with the merges in the file and the pre-tokenizer named by
//     tokenizer.ggml.pre (pretokenize.hpp), as llama.cpp maps those names.
// Control (3) and unknown (2) tokens are special added tokens, user-defined (4) ones added tokens
// matched even without parse_special. The keys and the behaviour are documented in docs/gguf.md,
// section "Tokenizer". Every lie is a mnemo::Error naming the file and the key.
#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

#include "mnemo/error.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "tokenizer/bpe.hpp"
#include "tokenizer/tokenizer_config.hpp"
#include "tokenizer/unicode.hpp"

namespace mnemo {
namespace {

using tokenizer_detail::AddedToken;
using tokenizer_detail::BpeConfig;
using tokenizer_detail::BpeFlavour;
using tokenizer_detail::PrependScheme;
using tokenizer_detail::SplitPattern;

const std::string kModel = "tokenizer.ggml.model";
const std::string kPre = "tokenizer.ggml.pre";
const std::string kTokens = "tokenizer.ggml.tokens";
const std::string kScores = "tokenizer.ggml.scores";
const std::string kTokenType = "tokenizer.ggml.token_type";
const std::string kMerges = "tokenizer.ggml.merges";
const std::string kBos = "tokenizer.ggml.bos_token_id";
const std::string kEos = "tokenizer.ggml.eos_token_id";
const std::string kEot = "tokenizer.ggml.eot_token_id";
const std::string kEom = "tokenizer.ggml.eom_token_id";
const std::string kUnk = "tokenizer.ggml.unknown_token_id";
const std::string kAddBos = "tokenizer.ggml.add_bos_token";
const std::string kAddEos = "tokenizer.ggml.add_eos_token";
const std::string kAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
const std::string kChatTemplate = "tokenizer.chat_template";

// The same bound BpeTokenizer puts on ids: real vocabularies stay below ~260k.
constexpr size_t kMaxTokens = size_t{1} << 21;

enum TokenType : int64_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// tokenizer.ggml.pre -> how llama.cpp pre-tokenizes that family (its names, its regex lists).
struct PreTokenizer {
    const char* name;
    SplitPattern split;
    bool ignore_merges;  // a word that is a token is that token (Llama-3's tokenizer.json says so)
    bool add_bos;        // the default of tokenizer.ggml.add_bos_token
};
const PreTokenizer kPreTokenizers[] = {
    {"default", SplitPattern::Default, false, false},
    {"gpt-2", SplitPattern::Gpt2, false, false},
    {"mpt", SplitPattern::Gpt2, false, false},
    {"olmo", SplitPattern::Gpt2, false, false},
    {"jais", SplitPattern::Gpt2, false, false},
    {"llama3", SplitPattern::Llama3, true, true},
    {"llama-v3", SplitPattern::Llama3, true, true},
    {"llama-bpe", SplitPattern::Llama3, true, true},
    {"dbrx", SplitPattern::Llama3, false, false},
    {"smaug-bpe", SplitPattern::Llama3, false, false},
    {"qwen2", SplitPattern::Qwen2, false, false},
    {"stablelm2", SplitPattern::Qwen2, false, false},
    {"starcoder", SplitPattern::Starcoder, false, false},
    {"refact", SplitPattern::Starcoder, false, false},
    {"command-r", SplitPattern::Starcoder, false, false},
    {"smollm", SplitPattern::Starcoder, false, false},
    {"codeshell", SplitPattern::Starcoder, false, false},
    {"falcon", SplitPattern::Falcon, false, false},
    {"deepseek-coder", SplitPattern::DeepseekCoder, false, false},
};

std::string quoted(std::string_view text) {
    std::string out(1, '\'');
    out += printable(text, 200);
    out += '\'';
    return out;
}

struct Reader {
    const GgufFile& f;

    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        throw Error(f.path() + ": key '" + key + "': " + what);
    }
    bool flag(const std::string& key, bool fallback) const { return f.has(key) ? f.get_bool(key) : fallback; }
    std::optional<int32_t> id(const std::string& key, size_t n_tokens) const {
        if (!f.has(key)) return std::nullopt;
        const int64_t v = f.get_int(key);
        if (v < 0 || static_cast<uint64_t>(v) >= n_tokens)
            fail(key, "token id " + std::to_string(v) + " is outside the vocabulary [0, " + std::to_string(n_tokens) +
                          ") of " + kTokens);
        return static_cast<int32_t>(v);
    }
};

struct Vocab {
    const std::vector<std::string>& tokens;
    std::vector<int64_t> types;
    std::vector<double> scores;  // empty when the file has none (allowed for gpt2)
};

Vocab read_vocab(const Reader& r, bool need_scores) {
    const GgufFile& f = r.f;
    Vocab v{f.get_strings(kTokens), {}, {}};
    const size_t n = v.tokens.size();
    if (n == 0) r.fail(kTokens, "is empty: a tokenizer needs at least one token");
    if (n > kMaxTokens)
        r.fail(kTokens, "holds " + std::to_string(n) + " tokens, more than the " + std::to_string(kMaxTokens) +
                            " a vocabulary may have");
    v.types.assign(n, kNormal);  // llama.cpp's reading of a file without types
    if (f.has(kTokenType)) {
        const std::vector<int64_t>& t = f.get_ints(kTokenType);
        if (t.size() != n)
            r.fail(kTokenType, "has " + std::to_string(t.size()) + " entries for the " + std::to_string(n) +
                                   " tokens of " + kTokens);
        for (size_t i = 0; i < n; ++i)
            if (t[i] < kNormal || t[i] > kByte)
                r.fail(kTokenType, "entry " + std::to_string(i) + " (token " + quoted(v.tokens[i]) + ") is " +
                                       std::to_string(t[i]) +
                                       ": expected 1 (normal), 2 (unknown), 3 (control), 4 (user-defined), 5 (unused) "
                                       "or 6 (byte)");
        v.types = t;
    }
    if (need_scores || f.has(kScores)) {
        const std::vector<double>& s = f.get_floats(kScores);
        if (s.size() != n)
            r.fail(kScores, "has " + std::to_string(s.size()) + " entries for the " + std::to_string(n) + " tokens of " +
                                kTokens);
        for (size_t i = 0; i < n; ++i)
            if (std::isnan(s[i])) r.fail(kScores, "entry " + std::to_string(i) + " is NaN");
        v.scores = s;
    }
    return v;
}

// Every token by its text (the first id of a text several ids share), the added tokens, and the
// id -> text list; the flavour-specific parts are filled by the callers.
BpeConfig base_config(const GgufFile& f, const Vocab& v) {
    BpeConfig cfg;
    cfg.source = f.path();
    cfg.id_pieces = v.tokens;
    cfg.vocab.reserve(v.tokens.size());
    for (size_t id = 0; id < v.tokens.size(); ++id) {
        const std::string& t = v.tokens[id];
        if (t.empty()) continue;  // nothing in a text can match it
        cfg.vocab.emplace(t, static_cast<int32_t>(id));
        const int64_t type = v.types[id];
        if (type == kControl || type == kUnknown || type == kUserDefined) {
            AddedToken a;
            a.content = t;
            a.id = static_cast<int32_t>(id);
            a.special = type != kUserDefined;
            cfg.added.push_back(std::move(a));
        }
    }
    return cfg;
}

// Bounds on the merges a "llama" vocabulary may imply. Real ones stay far below (a 32k-piece
// Llama vocabulary gives ~10^5 merges); a hostile file of long pieces that all split into pieces
// would otherwise cost time quadratic and memory cubic in the piece length.
constexpr size_t kMaxSpmMerges = size_t{1} << 23;
constexpr uint64_t kMaxSpmSplitBytes = uint64_t{1} << 28;  // bytes looked up while splitting

// SentencePiece: merges from every split of a normal piece into two normal pieces.
void spm_merges(const Reader& r, const Vocab& v, BpeConfig& cfg) {
    std::unordered_map<std::string_view, int32_t> normal;
    normal.reserve(v.tokens.size());
    std::vector<double> distinct;
    for (size_t id = 0; id < v.tokens.size(); ++id)
        if (v.types[id] == kNormal && !v.tokens[id].empty() && normal.emplace(v.tokens[id], static_cast<int32_t>(id)).second)
            distinct.push_back(v.scores[id]);
    std::sort(distinct.begin(), distinct.end(), std::greater<double>());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    auto rank_of = [&](double score) {
        return static_cast<int32_t>(std::lower_bound(distinct.begin(), distinct.end(), score, std::greater<double>()) -
                                    distinct.begin());
    };
    uint64_t looked_up = 0;
    for (size_t id = 0; id < v.tokens.size(); ++id) {
        const std::string_view piece = v.tokens[id];
        if (v.types[id] != kNormal || piece.empty()) continue;
        if (auto it = normal.find(piece); it->second != static_cast<int32_t>(id)) continue;  // a repeated text
        const int32_t rank = rank_of(v.scores[id]);
        size_t cut = unicode::decode_utf8(piece, 0).len;
        while (cut < piece.size()) {
            looked_up += piece.size();
            if (looked_up > kMaxSpmSplitBytes || cfg.merges.size() >= kMaxSpmMerges)
                r.fail(kTokens, "its normal pieces split into more than " +
                                    (looked_up > kMaxSpmSplitBytes ? std::to_string(kMaxSpmSplitBytes) + " bytes of pieces"
                                                                   : std::to_string(kMaxSpmMerges) + " pairs of pieces") +
                                    " (at token " + std::to_string(id) + "): not a vocabulary a model was trained with");
            const std::string_view left = piece.substr(0, cut), right = piece.substr(cut);
            if (normal.count(left) && normal.count(right)) {
                cfg.merges.emplace_back(std::string(left), std::string(right));
                cfg.merge_ranks.push_back(rank);
            }
            cut += unicode::decode_utf8(piece, cut).len;
        }
    }
}

std::string supported_pre_tokenizers() {
    std::string names;
    for (const PreTokenizer& p : kPreTokenizers) names += (names.empty() ? "" : ", ") + std::string(p.name);
    return names;
}

void gpt2_merges(const Reader& r, BpeConfig& cfg) {
    const std::vector<std::string>& merges = r.f.get_strings(kMerges);
    cfg.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
        const std::string& m = merges[i];
        auto entry = [&] { return "entry " + std::to_string(i) + " " + quoted(m); };
        // Pieces of a byte-level vocabulary hold no space; the first may be one character of any kind.
        const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
        if (sp == std::string::npos || sp + 1 == m.size())
            r.fail(kMerges, entry() + ": expected two pieces separated by a space");
        std::string left = m.substr(0, sp), right = m.substr(sp + 1);
        for (const std::string* part : {&left, &right})
            if (!cfg.vocab.count(*part))
                r.fail(kMerges, entry() + " names " + quoted(*part) + ", which is not in " + kTokens);
        if (!cfg.vocab.count(left + right))
            r.fail(kMerges, entry() + " makes " + quoted(left + right) + ", which is not in " + kTokens);
        cfg.merges.emplace_back(std::move(left), std::move(right));
    }
}

void add_unique(std::vector<int32_t>& ids, int32_t id) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

}  // namespace

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& f) {
    const Reader r{f};
    const std::string& model = f.get_string(kModel);
    const bool spm = model == "llama";
    if (!spm && model != "gpt2")
        r.fail(kModel, "tokenizer model " + quoted(model) +
                           " is not supported (supported: 'llama' - SentencePiece pieces with scores - and 'gpt2' - "
                           "byte-level BPE with merges)");
    const Vocab v = read_vocab(r, spm);
    const size_t n = v.tokens.size();
    BpeConfig cfg = base_config(f, v);
    bool default_add_bos = false;
    if (spm) {
        cfg.flavour = BpeFlavour::Metaspace;
        cfg.prepend = r.flag(kAddSpacePrefix, true) ? PrependScheme::Always : PrependScheme::Never;
        cfg.prepend_even_if_present = true;  // " x" -> "▁▁x", as llama.cpp and SentencePiece do
        cfg.split_on_metaspace = false;
        const bool typed = f.has(kTokenType);
        for (size_t id = 0; id < n && !cfg.byte_fallback; ++id)
            cfg.byte_fallback = typed ? v.types[id] == kByte
                                      : v.tokens[id].size() == 6 && v.tokens[id].compare(0, 3, "<0x") == 0;
        spm_merges(r, v, cfg);
        default_add_bos = true;
    } else {
        cfg.flavour = BpeFlavour::ByteLevel;
        const std::string pre = f.has(kPre) ? f.get_string(kPre) : "default";  // llama.cpp's reading
        const PreTokenizer* found = nullptr;
        for (const PreTokenizer& p : kPreTokenizers)
            if (pre == p.name) found = &p;
        if (!found)
            r.fail(kPre, "pre-tokenizer " + quoted(pre) + " is not supported (supported: " + supported_pre_tokenizers() +
                             ")");
        cfg.split = found->split;
        cfg.ignore_merges = found->ignore_merges;
        default_add_bos = found->add_bos;
        gpt2_merges(r, cfg);
    }
    cfg.unk_id = r.id(kUnk, n);
    if (!cfg.unk_id)
        for (size_t id = 0; id < n && !cfg.unk_id; ++id)
            if (v.types[id] == kUnknown) cfg.unk_id = static_cast<int32_t>(id);

    auto tok = std::make_unique<tokenizer_detail::BpeTokenizer>(std::move(cfg));
    tok->bos_id = r.id(kBos, n);
    tok->eos_id = r.id(kEos, n);
    tok->add_bos = r.flag(kAddBos, default_add_bos) && tok->bos_id.has_value();
    tok->add_eos = r.flag(kAddEos, false) && tok->eos_id.has_value();
    std::vector<int32_t> eos;
    if (tok->eos_id) add_unique(eos, *tok->eos_id);
    for (const std::string* key : {&kEot, &kEom})
        if (auto id = r.id(*key, n)) add_unique(eos, *id);
    // End-of-turn markers of the chat formats end generation too (as load_tokenizer does).
    for (const char* marker : {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|endoftext|>"})
        if (auto id = tok->token_id(marker); id && tok->is_special(*id)) add_unique(eos, *id);
    tok->eos_ids = std::move(eos);
    return tok;
}

ChatTemplate gguf_chat_template(const GgufFile& f, std::string* note) {
    const std::string source = f.has(kChatTemplate) ? f.get_string(kChatTemplate) : std::string();
    // The template's bos_token / eos_token are the texts of those ids.
    auto text_of = [&](const std::string& key) -> std::string {
        if (!f.has(key) || !f.has(kTokens)) return "";
        const std::vector<std::string>& tokens = f.get_strings(kTokens);
        const int64_t id = f.get_int(key);
        return id >= 0 && static_cast<uint64_t>(id) < tokens.size() ? tokens[static_cast<size_t>(id)] : "";
    };
    return chat_template_from_source(source, text_of(kBos), text_of(kEos),
                                     f.path() + " (" + kChatTemplate + ")", note);
}

}  // namespace mnemo
