// tokenizer.json -> BpeConfig. Only the pieces of the Hugging Face format that the supported
// families use are accepted; anything else is refused with a message naming the field, because
// silently ignoring a normalizer or pre-tokenizer would produce wrong token ids.
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "tokenizer/bpe.hpp"

namespace mnemo {
namespace {

using json::Value;
using tokenizer_detail::AddedToken;
using tokenizer_detail::BpeConfig;
using tokenizer_detail::BpeFlavour;
using tokenizer_detail::PrependScheme;
using tokenizer_detail::SplitPattern;

const char* const kMetaspace = "\xE2\x96\x81";

struct Reader {
    const std::string& source;

    [[noreturn]] void fail(const std::string& path, const std::string& what) const {
        throw Error(source + ": " + path + ": " + what);
    }
    template <class F>
    auto typed(const Value& v, const std::string& path, F&& get) const -> decltype(get(v)) {
        try {
            return get(v);
        } catch (const Error& e) {
            fail(path, e.what());
        }
    }
    bool boolean(const Value& obj, const char* key, const std::string& path, bool def) const {
        const Value* v = obj.find(key);
        if (!v || v->is_null()) return def;
        return typed(*v, path + "." + key, [](const Value& x) { return x.as_bool(); });
    }
    std::string string(const Value& v, const std::string& path) const {
        return typed(v, path, [](const Value& x) { return x.as_string(); });
    }
    std::string type_of(const Value& obj, const std::string& path) const {
        if (!obj.is_object()) fail(path, std::string("expected object, found ") + json::type_name(obj.type()));
        const Value* t = obj.find("type");
        if (!t) fail(path, "missing \"type\"");
        return string(*t, path + ".type");
    }
    const std::vector<Value>& array(const Value& v, const std::string& path) const {
        return typed(v, path, [](const Value& x) -> const std::vector<Value>& { return x.as_array(); });
    }
};

// Where the parsed pre-tokenizer/normalizer settings end up before the flavour is decided.
struct Pipeline {
    bool byte_level = false;
    bool metaspace = false;
    std::optional<SplitPattern> split;
};

void read_normalizer(const Reader& r, const Value& n, const std::string& path, BpeConfig& cfg,
                     Pipeline& p) {
    if (n.is_null()) return;
    const std::string type = r.type_of(n, path);
    if (type == "NFC") {
        cfg.nfc = true;
    } else if (type == "Sequence") {
        const Value* list = n.find("normalizers");
        if (!list) r.fail(path, "missing \"normalizers\"");
        const auto& items = r.array(*list, path + ".normalizers");
        for (size_t i = 0; i < items.size(); ++i)
            read_normalizer(r, items[i], path + ".normalizers[" + std::to_string(i) + "]", cfg, p);
    } else if (type == "Prepend") {
        // Llama-2 era files spell the metaspace logic as normalizers: Prepend("▁") + Replace.
        const Value* v = n.find("prepend");
        if (!v || r.string(*v, path + ".prepend") != kMetaspace)
            r.fail(path, "only Prepend of \"\\u2581\" is supported");
        cfg.prepend = PrependScheme::Always;
        cfg.prepend_even_if_present = true;
        cfg.split_on_metaspace = false;
        p.metaspace = true;
    } else if (type == "Replace") {
        const Value* pat = n.find("pattern");
        const Value* str = pat && pat->is_object() ? pat->find("String") : nullptr;
        const Value* content = n.find("content");
        if (!str || !content || r.string(*str, path + ".pattern.String") != " " ||
            r.string(*content, path + ".content") != kMetaspace)
            r.fail(path, "only Replace of \" \" with \"\\u2581\" is supported");
        p.metaspace = true;
    } else {
        r.fail(path, "normalizer type '" + type + "' is not supported");
    }
}

void read_pre_tokenizer(const Reader& r, const Value& t, const std::string& path, BpeConfig& cfg,
                        Pipeline& p) {
    if (t.is_null()) return;
    const std::string type = r.type_of(t, path);
    if (type == "Sequence") {
        const Value* list = t.find("pretokenizers");
        if (!list) r.fail(path, "missing \"pretokenizers\"");
        const auto& items = r.array(*list, path + ".pretokenizers");
        for (size_t i = 0; i < items.size(); ++i)
            read_pre_tokenizer(r, items[i], path + ".pretokenizers[" + std::to_string(i) + "]",
                               cfg, p);
    } else if (type == "ByteLevel") {
        p.byte_level = true;
        cfg.add_prefix_space = r.boolean(t, "add_prefix_space", path, false);
        if (r.boolean(t, "use_regex", path, true)) {
            if (p.split) r.fail(path, "ByteLevel use_regex together with a Split is not supported");
            p.split = SplitPattern::Gpt2;
        }
    } else if (type == "Split") {
        const Value* pat = t.find("pattern");
        const Value* regex = pat && pat->is_object() ? pat->find("Regex") : nullptr;
        if (!regex) r.fail(path, "only Split with a \"Regex\" pattern is supported");
        const std::string text = r.string(*regex, path + ".pattern.Regex");
        const Value* behavior = t.find("behavior");
        if (behavior && r.string(*behavior, path + ".behavior") != "Isolated")
            r.fail(path, "only Split behavior \"Isolated\" is supported");
        if (r.boolean(t, "invert", path, false)) r.fail(path, "Split with invert is not supported");
        auto known = tokenizer_detail::recognise_split_pattern(text);
        if (!known)
            r.fail(path + ".pattern.Regex",
                   "unsupported pre-tokenizer split pattern '" + text +
                       "' (supported: the GPT-2, Llama-3/OLMo-2 and Qwen2 patterns)");
        if (p.split) r.fail(path, "more than one split pattern is not supported");
        p.split = *known;
    } else if (type == "Metaspace") {
        p.metaspace = true;
        const Value* rep = t.find("replacement");
        if (rep && r.string(*rep, path + ".replacement") != kMetaspace)
            r.fail(path, "only the \"\\u2581\" replacement is supported");
        std::string scheme = "always";
        if (const Value* s = t.find("prepend_scheme"); s && !s->is_null())
            scheme = r.string(*s, path + ".prepend_scheme");
        else if (!r.boolean(t, "add_prefix_space", path, true))
            scheme = "never";
        if (scheme == "always") cfg.prepend = PrependScheme::Always;
        else if (scheme == "first") cfg.prepend = PrependScheme::First;
        else if (scheme == "never") cfg.prepend = PrependScheme::Never;
        else r.fail(path + ".prepend_scheme", "expected \"always\", \"first\" or \"never\"");
        cfg.split_on_metaspace = r.boolean(t, "split", path, true);
    } else {
        r.fail(path, "pre-tokenizer type '" + type + "' is not supported");
    }
}

void read_model(const Reader& r, const Value& model, BpeConfig& cfg) {
    if (!model.is_object()) r.fail("model", "missing or not an object");
    if (const Value* t = model.find("type")) {
        const std::string type = r.string(*t, "model.type");
        if (type != "BPE")
            r.fail("model.type", "model type '" + type + "' is not supported (only BPE)");
    }
    const Value* vocab = model.find("vocab");
    if (!vocab) r.fail("model.vocab", "missing");
    if (!vocab->is_object()) r.fail("model.vocab", "expected object of piece -> id");
    cfg.vocab.reserve(vocab->size());
    for (const auto& [piece, id] : vocab->as_object()) {
        const int64_t v = r.typed(id, "model.vocab['" + piece + "']",
                                  [](const Value& x) { return x.as_int(); });
        if (v < 0 || v > INT32_MAX)
            r.fail("model.vocab['" + piece + "']", "id " + std::to_string(v) + " out of range");
        cfg.vocab.emplace(piece, static_cast<int32_t>(v));
    }
    const Value* merges = model.find("merges");
    if (!merges) r.fail("model.merges", "missing");
    const auto& list = r.array(*merges, "model.merges");
    cfg.merges.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string path = "model.merges[" + std::to_string(i) + "]";
        if (list[i].is_string()) {
            const std::string& m = list[i].as_string();
            const size_t sp = m.find(' ');
            if (sp == std::string::npos || m.find(' ', sp + 1) != std::string::npos)
                r.fail(path, "expected \"left right\" with one space, found '" + m + "'");
            cfg.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
        } else if (list[i].is_array() && list[i].size() == 2) {
            cfg.merges.emplace_back(r.string(list[i].as_array()[0], path + "[0]"),
                                    r.string(list[i].as_array()[1], path + "[1]"));
        } else {
            r.fail(path, "expected a \"left right\" string or a [left, right] pair");
        }
    }
    cfg.byte_fallback = r.boolean(model, "byte_fallback", "model", false);
    cfg.ignore_merges = r.boolean(model, "ignore_merges", "model", false);
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const Value* v = model.find(key);
        if (v && !v->is_null() && !r.string(*v, std::string("model.") + key).empty())
            r.fail(std::string("model.") + key, "is not supported");
    }
    if (const Value* unk = model.find("unk_token"); unk && !unk->is_null()) {
        auto it = cfg.vocab.find(r.string(*unk, "model.unk_token"));
        if (it != cfg.vocab.end()) cfg.unk_id = it->second;
    }
}

void read_added_tokens(const Reader& r, const Value& added, BpeConfig& cfg) {
    if (added.is_null()) return;
    const auto& items = r.array(added, "added_tokens");
    for (size_t i = 0; i < items.size(); ++i) {
        const std::string path = "added_tokens[" + std::to_string(i) + "]";
        const Value& t = items[i];
        if (!t.is_object()) r.fail(path, "expected object");
        AddedToken a;
        const Value* id = t.find("id");
        const Value* content = t.find("content");
        if (!id) r.fail(path, "missing \"id\"");
        if (!content) r.fail(path, "missing \"content\"");
        const int64_t v = r.typed(*id, path + ".id", [](const Value& x) { return x.as_int(); });
        if (v < 0 || v > INT32_MAX) r.fail(path + ".id", "id " + std::to_string(v) + " out of range");
        a.id = static_cast<int32_t>(v);
        a.content = r.string(*content, path + ".content");
        a.special = r.boolean(t, "special", path, false);
        a.lstrip = r.boolean(t, "lstrip", path, false);
        a.rstrip = r.boolean(t, "rstrip", path, false);
        cfg.added.push_back(std::move(a));
    }
}

// A TemplateProcessing post-processor whose single-sequence template starts with a special token
// (Llama-3: "<|begin_of_text|> $A") means prompts get that token prepended: record it as BOS.
void read_post_processor(const Value& pp, Tokenizer& tok) {
    if (!pp.is_object()) return;
    const Value* type = pp.find("type");
    if (!type || !type->is_string()) return;
    if (type->as_string() == "Sequence") {
        if (const Value* list = pp.find("processors"); list && list->is_array())
            for (const Value& p : list->as_array()) read_post_processor(p, tok);
        return;
    }
    if (type->as_string() != "TemplateProcessing") return;
    const Value* single = pp.find("single");
    if (!single || !single->is_array() || single->size() == 0) return;
    const Value* first = single->as_array()[0].find("SpecialToken");
    const Value* name = first ? first->find("id") : nullptr;
    if (!name || !name->is_string()) return;
    if (auto id = tok.token_id(name->as_string())) {
        tok.bos_id = *id;
        tok.add_bos = true;
    }
}

}  // namespace

std::unique_ptr<Tokenizer> load_bpe_tokenizer_json(std::string_view json_text,
                                                   const std::string& source) {
    const Value doc = json::parse(json_text, source);
    const Reader r{source};
    if (!doc.is_object()) r.fail("(document)", "expected a JSON object");
    BpeConfig cfg;
    cfg.source = source;
    const Value* model = doc.find("model");
    if (!model) r.fail("model", "missing");
    read_model(r, *model, cfg);
    if (const Value* a = doc.find("added_tokens")) read_added_tokens(r, *a, cfg);

    Pipeline p;
    if (const Value* n = doc.find("normalizer")) read_normalizer(r, *n, "normalizer", cfg, p);
    if (const Value* t = doc.find("pre_tokenizer"))
        read_pre_tokenizer(r, *t, "pre_tokenizer", cfg, p);
    if (p.byte_level && p.metaspace)
        r.fail("pre_tokenizer", "ByteLevel and Metaspace together are not supported");
    if (p.metaspace) {
        if (p.split) r.fail("pre_tokenizer", "a split pattern with Metaspace is not supported");
        cfg.flavour = BpeFlavour::Metaspace;
    } else {
        // Without any pre-tokenizer a ByteLevel decoder still tells us the vocab is byte-level.
        bool byte_level = p.byte_level;
        if (!byte_level) {
            const Value* dec = doc.find("decoder");
            byte_level = dec && dec->is_object() && dec->find("type") &&
                         dec->find("type")->is_string() &&
                         dec->find("type")->as_string() == "ByteLevel";
        }
        if (!byte_level)
            r.fail("pre_tokenizer",
                   "neither ByteLevel nor Metaspace: cannot tell how this BPE vocabulary encodes "
                   "text");
        cfg.flavour = BpeFlavour::ByteLevel;
        cfg.split = p.split.value_or(SplitPattern::None);
    }
    auto tok = std::make_unique<tokenizer_detail::BpeTokenizer>(std::move(cfg));
    if (const Value* pp = doc.find("post_processor")) read_post_processor(*pp, *tok);
    return tok;
}

}  // namespace mnemo
