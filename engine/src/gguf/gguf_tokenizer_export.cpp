// Model folder tokenizer -> GGUF tokenizer metadata (gguf/gguf_tokenizer_export.hpp). The
// SentencePiece model file is read with a protobuf reader of its own (the few fields of
// sentencepiece_model.proto used here), as tools/convert/gguf_vocab_from_sentencepiece.py does:
// libsentencepiece's API, behind the module boundary, gives neither scores nor the normalizer.
#include "gguf/gguf_tokenizer_export.hpp"

#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "tokenizer/pretokenize.hpp"
#include "tokenizer/tokenizer_config.hpp"

namespace mnemo::detail {
namespace {

namespace fs = std::filesystem;
using tokenizer_detail::SplitPattern;

// GGUF token types, the same numbers as SentencePiece's piece types.
enum TokenType : int64_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct Vocab {
    std::string model;  // "llama" or "gpt2"
    std::string pre;    // gpt2
    std::vector<std::string> tokens;
    std::vector<float> scores;  // llama
    std::vector<int64_t> types;
    std::vector<std::string> merges;  // gpt2
    bool add_space_prefix = true;     // llama
    std::optional<int32_t> bos, eos, unk, pad;
    bool add_bos = false;
    std::optional<bool> add_eos;

    void put(size_t id, std::string text, int64_t type, float score = 0.0f) {
        while (tokens.size() <= id) {  // ids no file names: unused, as llama.cpp's converter fills them
            tokens.push_back("[PAD" + std::to_string(tokens.size()) + "]");
            types.push_back(kUnused);
            scores.push_back(0.0f);
        }
        tokens[id] = std::move(text);
        types[id] = type;
        scores[id] = score;
    }
};

// ---- tokenizer.model

// The fields of one protobuf message, with errors naming the file and the message.
class Proto {
public:
    struct Field {
        uint32_t number = 0;
        uint32_t wire = 0;
        uint64_t value = 0;     // varints
        std::string_view bytes;  // the rest
    };
    Proto(std::string_view bytes, const std::string& file, std::string where)
        : buf_(bytes), file_(file), where_(std::move(where)) {}

    bool next(Field& f) {
        if (pos_ >= buf_.size()) return false;
        at_ = pos_;
        const uint64_t key = varint();
        f.number = static_cast<uint32_t>(key >> 3);
        f.wire = static_cast<uint32_t>(key & 7);
        f.value = 0;
        f.bytes = {};
        if (f.wire == 0) f.value = varint();
        else if (f.wire == 1) f.bytes = take(8);
        else if (f.wire == 5) f.bytes = take(4);
        else if (f.wire == 2) f.bytes = take(varint());
        else fail("field " + std::to_string(f.number) + " has wire type " + std::to_string(f.wire) +
                  ", which no SentencePiece model field has");
        return true;
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw Error(file_ + ": " + where_ + ": at byte " + std::to_string(at_) + ": " + what);
    }
    const std::string& where() const { return where_; }

private:
    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= buf_.size()) fail("the message ends inside a varint");
            const uint8_t b = static_cast<uint8_t>(buf_[pos_++]);
            v |= static_cast<uint64_t>(b & 0x7F) << shift;
            if (b < 0x80) return v;
        }
        fail("a varint longer than 10 bytes");
    }
    std::string_view take(uint64_t n) {
        if (n > buf_.size() - pos_)
            fail("a field of " + std::to_string(n) + " bytes runs past the end (" + std::to_string(buf_.size() - pos_) +
                 " left)");
        const std::string_view out = buf_.substr(pos_, n);
        pos_ += n;
        return out;
    }
    std::string_view buf_;
    const std::string& file_;
    std::string where_;
    size_t pos_ = 0, at_ = 0;
};

float f32_of(const Proto& p, const Proto::Field& f, const char* name) {
    if (f.wire != 5) p.fail(std::string(name) + " is not a 32-bit float");
    float v;
    std::memcpy(&v, f.bytes.data(), 4);
    return v;
}
uint64_t varint_of(const Proto& p, const Proto::Field& f, const char* name) {
    if (f.wire != 0) p.fail(std::string(name) + " is not a varint");
    return f.value;
}
std::string_view bytes_of(const Proto& p, const Proto::Field& f, const char* name) {
    if (f.wire != 2) p.fail(std::string(name) + " is not length-delimited");
    return f.bytes;
}
int32_t int32_of(const Proto& p, const Proto::Field& f, const char* name) {
    return static_cast<int32_t>(static_cast<uint32_t>(varint_of(p, f, name)));  // negatives are 10-byte varints
}

// ModelProto: pieces = 1 (piece = 1, score = 2, type = 3), trainer_spec = 2 (model_type = 3,
// treat_whitespace_as_suffix = 24, unk/bos/eos/pad_id = 40..43), normalizer_spec = 3 (name = 1,
// precompiled_charsmap = 2, add_dummy_prefix = 3, remove_extra_whitespaces = 4,
// escape_whitespaces = 5). Unset fields keep the proto's defaults.
Vocab read_sentencepiece(const std::string& file) {
    const std::string data = read_file_capped(file, kMaxTokenizerFileBytes, "tokenizer file");
    Vocab v;
    v.model = "llama";
    int64_t model_type = 1;  // UNIGRAM
    bool suffix = false;
    int32_t ids[4] = {0, 1, 2, -1};  // unk, bos, eos, pad
    std::string normalizer;
    bool charsmap = false, remove_extra = true, escape = true;
    Proto top(data, file, "ModelProto");
    Proto::Field f;
    while (top.next(f)) {
        if (f.number == 1) {
            Proto piece(bytes_of(top, f, "pieces"), file, "pieces[" + std::to_string(v.tokens.size()) + "]");
            std::string text;
            float score = 0.0f;
            int64_t type = kNormal;
            Proto::Field g;
            while (piece.next(g)) {
                if (g.number == 1) text = std::string(bytes_of(piece, g, "piece"));
                else if (g.number == 2) score = f32_of(piece, g, "score");
                else if (g.number == 3) type = static_cast<int64_t>(varint_of(piece, g, "type"));
            }
            if (type < kNormal || type > kByte)
                piece.fail("type " + std::to_string(type) + " (piece '" + text + "') is not a SentencePiece piece type (1..6)");
            v.put(v.tokens.size(), std::move(text), type, score);
        } else if (f.number == 2) {
            Proto spec(bytes_of(top, f, "trainer_spec"), file, "trainer_spec");
            Proto::Field g;
            while (spec.next(g)) {
                if (g.number == 3) model_type = static_cast<int64_t>(varint_of(spec, g, "model_type"));
                else if (g.number == 24) suffix = varint_of(spec, g, "treat_whitespace_as_suffix") != 0;
                else if (g.number >= 40 && g.number <= 43) ids[g.number - 40] = int32_of(spec, g, "a special id");
            }
        } else if (f.number == 3) {
            Proto spec(bytes_of(top, f, "normalizer_spec"), file, "normalizer_spec");
            Proto::Field g;
            while (spec.next(g)) {
                if (g.number == 1) normalizer = std::string(bytes_of(spec, g, "name"));
                else if (g.number == 2) charsmap = !bytes_of(spec, g, "precompiled_charsmap").empty();
                else if (g.number == 3) v.add_space_prefix = varint_of(spec, g, "add_dummy_prefix") != 0;
                else if (g.number == 4) remove_extra = varint_of(spec, g, "remove_extra_whitespaces") != 0;
                else if (g.number == 5) escape = varint_of(spec, g, "escape_whitespaces") != 0;
            }
        }
    }
    // A GGUF "llama" vocabulary is merged by score, with spaces as U+2581 and no normalizer.
    const std::string why = ": a GGUF 'llama' vocabulary has no normalizer and merges pieces by score, so llama.cpp and "
                            "Mnemo would tokenize it differently from SentencePiece";
    if (v.tokens.empty()) throw Error(file + ": pieces: the model has no pieces");
    if (model_type != 2)
        throw Error(file + ": trainer_spec.model_type: " +
                    (model_type == 1 ? std::string("a unigram model") : "model type " + std::to_string(model_type)) +
                    ", not BPE" + why);
    if ((!normalizer.empty() && normalizer != "identity") || charsmap)
        throw Error(file + ": normalizer_spec.name: the model normalizes ('" + normalizer + "')" + why);
    if (remove_extra) throw Error(file + ": normalizer_spec.remove_extra_whitespaces: the model collapses whitespace" + why);
    if (!escape) throw Error(file + ": normalizer_spec.escape_whitespaces: the model keeps spaces as they are" + why);
    if (suffix) throw Error(file + ": trainer_spec.treat_whitespace_as_suffix: the model puts U+2581 after words" + why);
    const int32_t n = static_cast<int32_t>(v.tokens.size());
    auto id = [&](int32_t i) { return i >= 0 && i < n ? std::optional<int32_t>(i) : std::nullopt; };
    v.unk = id(ids[0]);
    v.bos = id(ids[1]);
    v.eos = id(ids[2]);
    v.pad = id(ids[3]);
    v.add_bos = v.bos.has_value();  // what libsentencepiece's tokenizer does (sentencepiece.cpp)
    return v;
}

// ---- tokenizer.json

// Whether a tokenizer.json node (or a Sequence of them, under `list`) has a step of one of `types`.
bool has_step(const json::Value* node, const char* list, std::initializer_list<const char*> types) {
    if (!node || !node->is_object()) return false;
    const json::Value* t = node->find("type");
    if (!t || !t->is_string()) return false;
    if (t->as_string() == "Sequence") {
        if (const json::Value* items = node->find(list); items && items->is_array())
            for (const json::Value& item : items->as_array())
                if (has_step(&item, list, types)) return true;
        return false;
    }
    for (const char* name : types)
        if (t->as_string() == name) return true;
    return false;
}

struct Split {
    std::optional<SplitPattern> pattern;
    bool prefix_space = false;
};

// The loader has validated the tree; this reads the split pattern out of it.
void read_split(const json::Value* node, Split& s) {
    if (!node || !node->is_object() || !node->find("type") || !node->find("type")->is_string()) return;
    const std::string& type = node->find("type")->as_string();
    auto flag = [&](const char* key, bool def) {
        const json::Value* x = node->find(key);
        return x && x->is_bool() ? x->as_bool() : def;
    };
    if (type == "Sequence") {
        if (const json::Value* items = node->find("pretokenizers"); items && items->is_array())
            for (const json::Value& item : items->as_array()) read_split(&item, s);
    } else if (type == "ByteLevel") {
        s.prefix_space = flag("add_prefix_space", false);
        if (flag("use_regex", true)) s.pattern = SplitPattern::Gpt2;
    } else if (type == "Split") {
        const json::Value* pattern = node->find("pattern");
        const json::Value* regex = pattern ? pattern->find("Regex") : nullptr;
        if (regex && regex->is_string()) s.pattern = tokenizer_detail::recognise_split_pattern(regex->as_string());
    }
}

// llama.cpp's pre-tokenizer names for the splits a tokenizer.json can declare (Mnemo reads the same
// names the same way, tokenizer/gguf_vocab.cpp); nullptr where no name means that.
const char* pre_name(SplitPattern split, bool ignore_merges) {
    if (split == SplitPattern::Gpt2 && !ignore_merges) return "gpt-2";
    if (split == SplitPattern::Llama3) return ignore_merges ? "llama-bpe" : "smaug-bpe";
    if (split == SplitPattern::Qwen2 && !ignore_merges) return "qwen2";
    return nullptr;
}

Vocab read_byte_level(const json::Value& doc, const std::string& file) {
    Vocab v;
    v.model = "gpt2";
    const json::Value& model = *doc.find("model");  // the loader checked it
    Split split;
    read_split(doc.find("pre_tokenizer"), split);
    if (!split.pattern)
        throw Error(file + ": pre_tokenizer: byte-level BPE without a split pattern (no Split regex, ByteLevel with "
                           "use_regex false): no tokenizer.ggml.pre means that, GGUF readers always split the text");
    if (split.prefix_space)
        throw Error(file + ": pre_tokenizer: ByteLevel add_prefix_space: no tokenizer.ggml.pre puts a space in front "
                           "of the text");
    const json::Value* im = model.find("ignore_merges");
    const bool ignore_merges = im && im->is_bool() && im->as_bool();
    const char* pre = pre_name(*split.pattern, ignore_merges);
    if (!pre)
        throw Error(file + ": model.ignore_merges: the split '" + tokenizer_detail::split_pattern_regex(*split.pattern) +
                    "' with ignore_merges " + (ignore_merges ? "true" : "false") +
                    ": no tokenizer.ggml.pre means that (gpt-2 and qwen2 merge always, llama-bpe ignores merges, "
                    "smaug-bpe is the Llama-3 split merging always)");
    v.pre = pre;
    for (const auto& [piece, id] : model.find("vocab")->as_object())
        v.put(static_cast<size_t>(id.as_int()), piece, kNormal);
    if (const json::Value* added = doc.find("added_tokens"); added && added->is_array())
        for (const json::Value& a : added->as_array()) {
            const json::Value* special = a.find("special");
            v.put(static_cast<size_t>(a.find("id")->as_int()), a.find("content")->as_string(),
                  special && special->is_bool() && special->as_bool() ? kControl : kUserDefined);
        }
    const std::vector<json::Value>& merges = model.find("merges")->as_array();
    v.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
        if (merges[i].is_string()) {
            v.merges.push_back(merges[i].as_string());
            continue;
        }
        const std::string& left = merges[i].as_array()[0].as_string();
        const std::string& right = merges[i].as_array()[1].as_string();
        if (left.find(' ') != std::string::npos || right.find(' ') != std::string::npos)
            throw Error(file + ": model.merges[" + std::to_string(i) +
                        "]: a piece holds a space, which tokenizer.ggml.merges (\"left right\") cannot say");
        v.merges.push_back(left + " " + right);
    }
    if (const json::Value* unk = model.find("unk_token"); unk && unk->is_string())
        if (const json::Value* id = model.find("vocab")->find(unk->as_string())) v.unk = static_cast<int32_t>(id->as_int());
    return v;
}

// The tokenizer.json of a SentencePiece-style folder names its added tokens special or not:
// those types replace tokenizer.model's (user-defined pieces that the folder's tokenizer treats
// as special are control tokens), and added tokens past tokenizer.model's pieces are appended.
void types_from_added_tokens(const json::Value& doc, const std::string& json_file, const std::string& model_file, Vocab& v) {
    const json::Value* added = doc.find("added_tokens");
    if (!added || !added->is_array()) return;
    const size_t pieces = v.tokens.size();
    for (size_t i = 0; i < added->size(); ++i) {
        const json::Value& a = added->as_array()[i];
        const size_t id = static_cast<size_t>(a.find("id")->as_int());
        const std::string& content = a.find("content")->as_string();
        const json::Value* s = a.find("special");
        const int64_t type = s && s->is_bool() && s->as_bool() ? kControl : kUserDefined;
        if (id >= pieces) {
            v.put(id, content, type);
        } else if (v.tokens[id] != content) {
            throw Error(json_file + ": added_tokens[" + std::to_string(i) + "]: id " + std::to_string(id) + " is " +
                        json::quote(content) + " here but " + json::quote(v.tokens[id]) + " in " + model_file);
        } else if (v.types[id] == kNormal || v.types[id] == kUserDefined || v.types[id] == kControl) {
            v.types[id] = type;
        }
    }
}

// ---- config.json, tokenizer_config.json: as load_tokenizer() reads them (tokenizer/load.cpp)

using Lookup = std::function<std::optional<int32_t>(const std::string&)>;

std::vector<int64_t> id_list(const json::Value& cfg, const char* key, const std::string& file) {
    std::vector<int64_t> ids;
    const json::Value* v = cfg.find(key);
    if (!v || v->is_null()) return ids;
    auto one = [&](const json::Value& x) {
        if (!x.is_integer()) throw Error(file + ": " + key + ": expected an integer or a list of them");
        ids.push_back(x.as_int());
    };
    if (v->is_array()) for (const json::Value& x : v->as_array()) one(x);
    else one(*v);
    return ids;
}

void read_folder_config(const fs::path& dir, int32_t n, const Lookup& lookup, Vocab& v) {
    auto in_range = [&](int64_t id, const std::string& what) {
        if (id < 0 || id >= n)
            throw Error(what + ": token id " + std::to_string(id) + " out of range [0, " + std::to_string(n) + ")");
        return static_cast<int32_t>(id);
    };
    if (const fs::path cj = dir / "config.json"; fs::exists(cj)) {
        const json::Value cfg = json::parse_file(cj.string());
        const std::string where = cj.string();
        if (auto b = id_list(cfg, "bos_token_id", where); !b.empty()) v.bos = in_range(b[0], where + ": bos_token_id");
        if (auto e = id_list(cfg, "eos_token_id", where); !e.empty()) v.eos = in_range(e[0], where + ": eos_token_id");
        if (const json::Value* p = cfg.find("pad_token_id"); p && p->is_integer() && p->as_int() >= 0 && p->as_int() < n)
            v.pad = static_cast<int32_t>(p->as_int());
    }
    if (const fs::path tc = dir / "tokenizer_config.json"; fs::exists(tc)) {
        const json::Value cfg = json::parse_file(tc.string());
        const std::string where = tc.string();
        auto token = [&](const char* key, bool required) -> std::optional<int32_t> {
            const std::optional<std::string> text = token_text(cfg, key);
            if (!text) return std::nullopt;
            const std::optional<int32_t> id = lookup(*text);
            if (!id && required) throw Error(where + ": " + key + " '" + *text + "' is not in the vocabulary");
            return id;
        };
        if (auto id = token("bos_token", true)) v.bos = id;
        if (auto id = token("eos_token", true)) v.eos = id;
        if (auto id = token("unk_token", false)) v.unk = id;
        if (auto id = token("pad_token", false)) v.pad = id;
        auto flag = [&](const char* key) -> std::optional<bool> {
            const json::Value* x = cfg.find(key);
            if (!x || x->is_null()) return std::nullopt;
            if (!x->is_bool()) throw Error(where + ": " + key + ": expected boolean");
            return x->as_bool();
        };
        if (auto b = flag("add_bos_token")) v.add_bos = *b;
        v.add_eos = flag("add_eos_token");
    }
    if (!v.bos) v.add_bos = false;
}

// tokenizer_config.json's chat_template: a string, or a list of {name, template} whose "default"
// is the chat template (as detect_chat_template reads it).
std::optional<std::string> chat_template(const fs::path& dir) {
    const fs::path tc = dir / "tokenizer_config.json";
    if (!fs::exists(tc)) return std::nullopt;
    const json::Value cfg = json::parse_file(tc.string());
    const json::Value* ct = cfg.find("chat_template");
    if (!ct || ct->is_null()) return std::nullopt;
    if (ct->is_string()) return ct->as_string();
    if (ct->is_array()) {
        for (const json::Value& item : ct->as_array()) {
            const json::Value* name = item.find("name");
            const json::Value* text = item.find("template");
            if (name && name->is_string() && name->as_string() == "default" && text && text->is_string())
                return text->as_string();
        }
        return std::nullopt;
    }
    throw Error(tc.string() + ": chat_template: expected a string or a list of {name, template}");
}

}  // namespace

GgufMetadata tokenizer_gguf_metadata(const std::string& model_dir) {
    const fs::path dir(model_dir);
    const fs::path tj = dir / "tokenizer.json", tm = dir / "tokenizer.model";
    const bool has_json = fs::exists(tj), has_model = fs::exists(tm);
    if (!has_json && !has_model) return {};

    Vocab v;
    Lookup lookup;
    int32_t n = 0;  // the vocabulary size load_tokenizer() sees, which config ids are checked against
    std::unique_ptr<Tokenizer> loaded;
    if (has_json) {
        // Read it as load_tokenizer() does first: what it refuses is refused here too.
        const std::string file = tj.string();
        const std::string text = read_file_capped(file, kMaxTokenizerFileBytes, "tokenizer file");
        loaded = load_bpe_tokenizer_json(text, file);
        const json::Value doc = json::parse(text, file);
        const bool metaspace = has_step(doc.find("normalizer"), "normalizers", {"Prepend", "Replace"}) ||
                               has_step(doc.find("pre_tokenizer"), "pretokenizers", {"Metaspace"});
        if (metaspace) {
            if (!has_model)
                throw Error(file + ": a SentencePiece-style (Metaspace) tokenizer.json without tokenizer.model: a GGUF "
                                   "'llama' vocabulary needs the pieces' scores, which only tokenizer.model has");
            v = read_sentencepiece(tm.string());
            types_from_added_tokens(doc, file, tm.string(), v);
        } else {
            v = read_byte_level(doc, file);
        }
        // The tokenizer.json's own BOS facts (a TemplateProcessing post-processor), as the loader has them.
        v.bos = loaded->bos_id;
        v.eos = loaded->eos_id;
        v.add_bos = loaded->add_bos;
        const Tokenizer* tok = loaded.get();
        lookup = [tok](const std::string& s) { return tok->token_id(s); };
        n = loaded->vocab_size();
    } else {
        v = read_sentencepiece(tm.string());
        auto by_text = std::make_shared<std::unordered_map<std::string, int32_t>>();
        for (size_t id = 0; id < v.tokens.size(); ++id) by_text->emplace(v.tokens[id], static_cast<int32_t>(id));
        lookup = [by_text](const std::string& s) -> std::optional<int32_t> {
            auto it = by_text->find(s);
            return it == by_text->end() ? std::nullopt : std::optional<int32_t>(it->second);
        };
        n = static_cast<int32_t>(v.tokens.size());
    }
    read_folder_config(dir, n, lookup, v);

    // Pad to the embedding's rows: llama.cpp takes the vocabulary size from the tokens.
    if (const fs::path cj = dir / "config.json"; fs::exists(cj)) {
        const json::Value cfg = json::parse_file(cj.string());
        if (const json::Value* vs = cfg.find("vocab_size"); vs && vs->is_integer() && vs->as_int() > 0 &&
                                                            static_cast<uint64_t>(vs->as_int()) > v.tokens.size() &&
                                                            vs->as_int() <= (int64_t{1} << 21))
            v.put(static_cast<size_t>(vs->as_int()) - 1, "[PAD" + std::to_string(vs->as_int() - 1) + "]", kUnused);
    }

    GgufMetadata meta;
    meta.emplace_back("tokenizer.ggml.model", gguf_string(v.model));
    if (v.model == "gpt2") meta.emplace_back("tokenizer.ggml.pre", gguf_string(v.pre));
    meta.emplace_back("tokenizer.ggml.tokens", gguf_strings(v.tokens));
    if (v.model == "llama") meta.emplace_back("tokenizer.ggml.scores", gguf_f32s(v.scores));
    meta.emplace_back("tokenizer.ggml.token_type", gguf_ints(GgufValueType::I32, v.types));
    if (v.model == "gpt2") meta.emplace_back("tokenizer.ggml.merges", gguf_strings(v.merges));
    auto id_key = [&](const char* key, const std::optional<int32_t>& id) {
        if (id) meta.emplace_back(std::string("tokenizer.ggml.") + key, gguf_u32(static_cast<uint32_t>(*id)));
    };
    id_key("bos_token_id", v.bos);
    id_key("eos_token_id", v.eos);
    id_key("unknown_token_id", v.unk);
    id_key("padding_token_id", v.pad);
    meta.emplace_back("tokenizer.ggml.add_bos_token", gguf_bool(v.add_bos));
    meta.emplace_back("tokenizer.ggml.add_eos_token", gguf_bool(v.add_eos.value_or(false)));
    if (v.model == "llama") meta.emplace_back("tokenizer.ggml.add_space_prefix", gguf_bool(v.add_space_prefix));
    if (auto t = chat_template(dir)) meta.emplace_back("tokenizer.chat_template", gguf_string(std::move(*t)));
    return meta;
}

}  // namespace mnemo::detail
