// load_tokenizer(): picks tokenizer.json or tokenizer.model in a model folder and fills in the
// BOS/EOS facts that live in tokenizer_config.json and config.json; a GGUF file goes to
// load_gguf_tokenizer (gguf_vocab.cpp).
#include <algorithm>
#include <filesystem>

#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_config.hpp"

namespace mnemo {
namespace {

namespace fs = std::filesystem;

std::vector<int32_t> id_list(const json::Value& cfg, const char* key, const std::string& file) {
    std::vector<int32_t> ids;
    const json::Value* v = cfg.find(key);
    if (!v || v->is_null()) return ids;
    auto one = [&](const json::Value& x) {
        if (!x.is_integer() || x.as_int() < 0 || x.as_int() > INT32_MAX)
            throw Error(file + ": " + key + ": expected a non-negative integer or a list of them");
        ids.push_back(static_cast<int32_t>(x.as_int()));
    };
    if (v->is_array()) for (const auto& x : v->as_array()) one(x);
    else one(*v);
    return ids;
}

void add_unique(std::vector<int32_t>& ids, int32_t id) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

// A vocabulary without a single token that stands for text (empty, or nothing but special
// tokens) cannot encode a prompt: the encoder drops what it has no token for, and the model would
// run on a lone BOS and answer with rc 0. Refused here, where the file can be named.
void check_vocabulary(const Tokenizer& tok, const std::string& file) {
    const int32_t n = tok.vocab_size();
    for (int32_t id = 0; id < n; ++id)
        if (!tok.is_special(id) && !tok.token_bytes(id).empty()) return;
    throw Error(file + ": the vocabulary has " + std::to_string(n) + " token" + (n == 1 ? "" : "s") +
                (n == 0 ? "" : ", none of them for text (all special or empty)") +
                ": expected the model's tokenizer, which has a token for every piece of text it encodes");
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_dir) {
    if (looks_like_gguf(model_dir)) {  // a GGUF file holds its tokenizer in its metadata
        std::unique_ptr<Tokenizer> tok = load_gguf_tokenizer(GgufFile(model_dir));
        check_vocabulary(*tok, model_dir);
        return tok;
    }
    const fs::path dir(model_dir);
    std::unique_ptr<Tokenizer> tok;
    std::string file;
    if (const fs::path tj = dir / "tokenizer.json"; fs::exists(tj)) {
        file = tj.string();
        tok = load_bpe_tokenizer_json(read_file_capped(file, kMaxTokenizerFileBytes, "tokenizer file"), file);
    } else if (const fs::path tm = dir / "tokenizer.model"; fs::exists(tm)) {
        file = tm.string();
        tok = load_sentencepiece(file);
    } else {
        throw Error(model_dir + ": no tokenizer.json or tokenizer.model in the model folder");
    }
    check_vocabulary(*tok, file);
    auto check = [&](int32_t id, const std::string& what) {
        if (id < 0 || id >= tok->vocab_size())
            throw Error(what + ": token id " + std::to_string(id) + " out of range [0, " +
                        std::to_string(tok->vocab_size()) + ")");
        return id;
    };

    // config.json first, tokenizer_config.json second: the latter names the tokens the chat
    // templates use and so wins when both are present.
    std::vector<int32_t> config_eos;
    if (const fs::path cj = dir / "config.json"; fs::exists(cj)) {
        const json::Value cfg = json::parse_file(cj.string());
        const std::string where = cj.string();
        if (auto b = id_list(cfg, "bos_token_id", where); !b.empty())
            tok->bos_id = check(b[0], where + ": bos_token_id");
        for (int32_t id : id_list(cfg, "eos_token_id", where))
            config_eos.push_back(check(id, where + ": eos_token_id"));
        if (!config_eos.empty()) tok->eos_id = config_eos[0];
    }
    if (const fs::path tc = dir / "tokenizer_config.json"; fs::exists(tc)) {
        const json::Value cfg = json::parse_file(tc.string());
        const std::string where = tc.string();
        if (auto text = token_text(cfg, "bos_token")) {
            auto id = tok->token_id(*text);
            if (!id) throw Error(where + ": bos_token '" + *text + "' is not in the vocabulary");
            tok->bos_id = *id;
        }
        if (auto text = token_text(cfg, "eos_token")) {
            auto id = tok->token_id(*text);
            if (!id) throw Error(where + ": eos_token '" + *text + "' is not in the vocabulary");
            tok->eos_id = *id;
        }
        if (const json::Value* ab = cfg.find("add_bos_token"); ab && !ab->is_null()) {
            if (!ab->is_bool()) throw Error(where + ": add_bos_token: expected boolean");
            tok->add_bos = ab->as_bool();
        }
    }
    if (tok->add_bos && !tok->bos_id) tok->add_bos = false;  // nothing to add

    std::vector<int32_t> eos;
    if (tok->eos_id) add_unique(eos, *tok->eos_id);
    for (int32_t id : config_eos) add_unique(eos, id);
    for (int32_t id : tok->eos_ids) add_unique(eos, id);
    // End-of-turn markers of the chat formats end generation too.
    for (const char* marker : {"<|eot_id|>", "<|im_end|>", "<|endoftext|>"})
        if (auto id = tok->token_id(marker); id && tok->is_special(*id)) add_unique(eos, *id);
    tok->eos_ids = std::move(eos);
    return tok;
}

}  // namespace mnemo
