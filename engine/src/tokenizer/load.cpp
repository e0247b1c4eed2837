// load_tokenizer(): picks tokenizer.json or tokenizer.model in a model folder and fills in the
// BOS/EOS facts that live in tokenizer_config.json and config.json.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_config.hpp"

namespace mnemo {
namespace {

namespace fs = std::filesystem;

std::string read_text_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string() + ": cannot open file");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw Error(path.string() + ": read error");
    return text;
}

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

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_dir) {
    const fs::path dir(model_dir);
    std::unique_ptr<Tokenizer> tok;
    if (const fs::path tj = dir / "tokenizer.json"; fs::exists(tj)) {
        tok = load_bpe_tokenizer_json(read_text_file(tj), tj.string());
    } else if (const fs::path tm = dir / "tokenizer.model"; fs::exists(tm)) {
        tok = load_sentencepiece(tm.string());
    } else {
        throw Error(model_dir + ": no tokenizer.json or tokenizer.model in the model folder");
    }
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
