#include "pkm_config.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "config_checks.hpp"

namespace mnemo::pkm {

using config::num;
using config::require;

namespace {

// One entry of mem_positions: "<layer>:in" or "<layer>:after".
MemPosition parse_position(const std::string& text, const std::string& field, int64_t layers) {
    const size_t colon = text.find(':');
    const std::string bad = field + " = '" + text + "'";
    require(colon != std::string::npos && colon > 0,
            bad + ": expected \"<layer>:in\" or \"<layer>:after\", e.g. \"2:in\"");
    MemPosition p;
    const char* b = text.data();
    const auto r = std::from_chars(b, b + colon, p.layer);
    require(r.ec == std::errc() && r.ptr == b + colon, bad + ": '" + text.substr(0, colon) + "' is not a layer number");
    const std::string where = text.substr(colon + 1);
    if (where == "in")
        p.where = MemWhere::In;
    else if (where == "after")
        p.where = MemWhere::After;
    else
        require(false,
                bad + ": position '" + where + "' must be 'in' (replaces the FFN) or 'after' (added after the block)");
    require(p.layer >= 0 && p.layer < layers, bad + ": layer " + num(p.layer) + " is out of range (n_layers = " +
                                                  num(layers) + ", layers 0.." + num(layers - 1) + ")");
    return p;
}

std::vector<MemPosition> read_positions(const plugin::Host& h, int64_t layers) {
    require(h.has("mem_positions"), "field 'mem_positions' is missing (expected a list such as [\"2:in\"])");
    require(h.has("mem_positions.0"),
            "field 'mem_positions' must be a non-empty array of strings such as [\"2:in\", \"5:after\"]");
    std::vector<MemPosition> out;
    for (int64_t i = 0; h.has(("mem_positions." + num(i)).c_str()); ++i) {
        const std::string path = "mem_positions." + num(i);
        const MemPosition p = parse_position(h.get_string(path.c_str(), ""), "mem_positions[" + num(i) + "]", layers);
        for (const MemPosition& q : out)
            require(q.layer != p.layer || q.where != p.where, "mem_positions lists '" + p.key() + "' twice");
        out.push_back(p);
    }
    return out;
}

}  // namespace

std::string MemPosition::key() const { return std::to_string(layer) + (where == MemWhere::In ? "_in" : "_after"); }

bool PkmConfig::has_memory(int64_t layer, MemWhere where) const {
    return std::any_of(mem_positions.begin(), mem_positions.end(),
                       [&](const MemPosition& p) { return p.layer == layer && p.where == where; });
}

PkmConfig read_config(const plugin::Host& h) {
    PkmConfig c;
    c.dim = h.get_int("emb_dim");
    c.layers = h.get_int("n_layers");
    c.heads = h.get_int("n_heads");
    c.vocab = h.get_int("n_words");
    c.max_positions = h.get_int("max_position_embeddings");
    require(c.dim > 0 && c.layers > 0 && c.heads > 0 && c.vocab > 0 && c.max_positions > 0,
            "emb_dim, n_layers, n_heads, n_words and max_position_embeddings must be > 0");
    require(c.dim % c.heads == 0, "emb_dim (" + num(c.dim) + ") must be a multiple of n_heads (" + num(c.heads) + ")");
    c.head_dim = c.dim / c.heads;
    c.ffn = h.get_int("ffn_dim", 4 * c.dim);
    require(c.ffn > 0, "ffn_dim must be > 0, got " + num(c.ffn));
    // XLM's FFN is ReLU unless gelu_activation; only the GELU (erf) form is implemented here.
    require(h.get_bool("gelu_activation", true),
            "gelu_activation = false (a ReLU FFN) is not supported; the pkm plugin implements XLM's erf GELU FFN");
    c.ln_eps = h.get_float("layer_norm_eps", 1e-12);
    require(c.ln_eps >= 0, "layer_norm_eps must be >= 0");
    c.tied = h.get_bool("share_inout_emb", true);
    c.n_langs = h.get_int("n_langs", 1);
    require(c.n_langs >= 1, "n_langs must be >= 1, got " + num(c.n_langs));
    c.use_lang_emb = h.get_bool("use_lang_emb", true);
    if (c.n_langs > 1 && c.use_lang_emb) {
        require(h.has("lang_id"), "n_langs = " + num(c.n_langs) +
                                      " with use_lang_emb: field 'lang_id' (the language of the text, 0.." +
                                      num(c.n_langs - 1) + ") is missing");
        c.lang_id = h.get_int("lang_id");
        require(c.lang_id >= 0 && c.lang_id < c.n_langs,
                "lang_id " + num(c.lang_id) + " is out of range (n_langs = " + num(c.n_langs) + ")");
    }

    c.mem_positions = read_positions(h, c.layers);
    c.mem_k_dim = h.get_int("mem_k_dim");
    c.mem_heads = h.get_int("mem_heads");
    c.mem_knn = h.get_int("mem_knn");
    c.mem_n_keys = h.get_int("mem_n_keys");
    require(c.mem_k_dim >= 2 && c.mem_k_dim % 2 == 0,
            "mem_k_dim must be even and >= 2 (each product-key half has mem_k_dim / 2 dims), got " + num(c.mem_k_dim));
    require(c.mem_heads >= 1, "mem_heads must be >= 1, got " + num(c.mem_heads));
    require(c.mem_n_keys >= 1, "mem_n_keys must be >= 1, got " + num(c.mem_n_keys));
    require(c.mem_n_keys <= 46340,
            "mem_n_keys " + num(c.mem_n_keys) + " is too large: mem_n_keys^2 value ids must fit in int32");
    require(c.mem_knn >= 1 && c.mem_knn <= c.mem_n_keys, "mem_knn (" + num(c.mem_knn) + ") must be in 1..mem_n_keys (" +
                                                             num(c.mem_n_keys) +
                                                             "): each side keeps mem_knn of its mem_n_keys sub-keys");
    c.mem_v_dim = h.get_int("mem_v_dim", -1);
    if (c.mem_v_dim < 0) c.mem_v_dim = c.dim;  // XLM: -1 means the output dimension
    require(c.mem_v_dim == c.dim, "mem_v_dim (" + num(c.mem_v_dim) + ") must equal emb_dim (" + num(c.dim) +
                                      ") or be -1: the memory output is added to the hidden state");
    c.mem_query_bias = h.get_bool("mem_query_bias", true);
    c.mem_query_batchnorm = h.get_bool("mem_query_batchnorm", false);
    c.mem_bn_eps = h.get_float("mem_bn_eps", 1e-5);
    require(c.mem_bn_eps >= 0, "mem_bn_eps must be >= 0");
    c.mem_temperature = h.get_float("mem_temperature", 1.0);
    require(c.mem_temperature > 0, "mem_temperature must be > 0");
    c.mem_score_softmax = h.get_bool("mem_score_softmax", true);
    return c;
}

std::string describe(const PkmConfig& c) {
    std::ostringstream s;
    s << "pkm (XLM post-LN, " << c.layers << " layers, dim " << c.dim << ", heads " << c.heads << ", ffn " << c.ffn
      << "; memories";
    for (const MemPosition& p : c.mem_positions) s << " " << p.key();
    s << ": " << c.mem_heads << " heads, " << c.mem_n_keys << "^2 values, knn " << c.mem_knn << ", k " << c.mem_k_dim;
    if (c.mem_query_batchnorm) s << ", query BN";
    s << ")";
    return s.str();
}

}  // namespace mnemo::pkm
