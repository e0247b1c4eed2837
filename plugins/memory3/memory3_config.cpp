#include "memory3_config.hpp"

#include <algorithm>
#include <initializer_list>
#include <sstream>

namespace mnemo::memory3 {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

void require(bool ok, const std::string& what) {
    if (!ok) throw plugin::PluginError("config.json: " + what);
}

std::string field(const char* name) { return std::string("memory3.") + name; }

int64_t int_field(const plugin::Host& h, const char* name, int64_t fallback) {
    return h.get_int(field(name).c_str(), fallback);
}

// True when `path` holds a number, boolean or string. The host reads fields by type only, so a
// value that none of the scalar readers accept and that has no element 0 is an empty list or an
// object.
bool is_scalar(const plugin::Host& h, const std::string& path) {
    const auto accepts = [&](auto read) {
        try {
            read();
            return true;
        } catch (const plugin::PluginError&) {
            return false;
        }
    };
    return accepts([&] { h.get_float(path.c_str()); }) || accepts([&] { h.get_bool(path.c_str(), false); }) ||
           accepts([&] { h.get_string(path.c_str(), ""); });
}

std::vector<int64_t> read_memory_layers(const plugin::Host& h, int64_t layers) {
    const std::string f = field("memory_layers");
    std::vector<int64_t> out;
    if (!h.has(f.c_str())) {
        for (int64_t l = 0; l < layers / 2; ++l) out.push_back(l);  // §3.3: the first half of the layers
        require(!out.empty(), "memory3.memory_layers: a model of " + num(layers) +
                                  " layer has no first half to default to; list the memory layers");
        return out;
    }
    out = llama::read_int_list(h, f);
    for (size_t i = 0; i < out.size(); ++i) {
        require(out[i] >= 0 && out[i] < layers, "memory3.memory_layers[" + num(static_cast<int64_t>(i)) + "] = " +
                                                    num(out[i]) + " is out of range (num_hidden_layers = " +
                                                    num(layers) + ", layers 0.." + num(layers - 1) + ")");
        if (i > 0)  // (the message reads out[i - 1]: build it only where that exists)
            require(out[i] > out[i - 1], "memory3.memory_layers must be strictly increasing (no repeats), got " +
                                             num(out[i - 1]) + " before " + num(out[i]));
    }
    return out;
}

// The reference BOS ids: the explicit list (possibly empty: no prefix), else the tokenized text.
std::vector<int32_t> read_prefix_ids(const plugin::Host& h, const std::string& text, int64_t vocab) {
    const std::string f = field("reference_bos_ids");
    std::vector<int32_t> ids;
    if (h.has(f.c_str())) {
        require(h.has((f + ".0").c_str()) || !is_scalar(h, f),
                "memory3.reference_bos_ids must be a list of token ids, e.g. [1, 17, 4]");
        for (int64_t i = 0; h.has((f + "." + num(i)).c_str()); ++i) {
            const int64_t id = h.get_int((f + "." + num(i)).c_str());
            require(id >= 0 && id < vocab, "memory3.reference_bos_ids[" + num(i) + "] = " + num(id) +
                                               " is not a token id (vocab_size = " + num(vocab) + ")");
            ids.push_back(static_cast<int32_t>(id));
        }
    } else if (!text.empty()) {
        try {
            ids = h.tokenize(text);
        } catch (const plugin::PluginError& e) {
            require(false, "memory3.reference_bos_ids is not given and memory3.reference_bos \"" + text +
                               "\" cannot be tokenized (" + e.what() +
                               "); give the ids of the reference BOS in memory3.reference_bos_ids");
        }
        require(!ids.empty(), "memory3.reference_bos \"" + text + "\" tokenizes to no ids");
        for (int32_t id : ids)
            require(id >= 0 && id < vocab, "memory3.reference_bos \"" + text + "\" tokenizes to id " + num(id) +
                                               ", outside the model's vocab_size " + num(vocab));
    }
    require(ids.size() <= MNEMO_MAX_PREFIX_IDS,
            "the reference BOS has " + num(static_cast<int64_t>(ids.size())) + " tokens; at most " +
                num(MNEMO_MAX_PREFIX_IDS) + " are supported");
    return ids;
}

}  // namespace

bool Memory3Config::is_memory_layer(int64_t layer) const {
    return std::binary_search(memory_layers.begin(), memory_layers.end(), layer);
}

namespace {

// The UltraMemV2 memory layers, if config.json switches them on with mem_insert_way. Only V2:
// its other mem_* fields mean what they mean for model_type "ultramem_v2". A config written for
// V1 (UltraMemLayerV1: no mem_share_ratio / mem_key_expand_time / mem_q_for_each_tucker_rank, a
// value table per layer) is refused rather than read with V2's defaults.
std::optional<ultramem::MemoryLayersConfig> read_ultramem_layers(const plugin::Host& h, int64_t layers) {
    static const char* const kFields[] = {
        "mem_knum",        "mem_kdim",          "mem_vdim",        "mem_knn",
        "mem_head",        "mem_tucker_rank",   "mem_tucker_multihead", "mem_value_expand_time",
        "mem_pre_vdim",    "mem_share_ratio",   "mem_key_expand_time",  "mem_q_for_each_tucker_rank",
        "mem_use_glu_act"};
    if (!h.has("mem_insert_way")) {
        for (const char* f : kFields)
            require(!h.has(f), std::string(f) +
                                   " is set but mem_insert_way is not: mem_insert_way (\"full\" or pairs \"a:b/c:d\") "
                                   "switches a memory3 model's UltraMemV2 memory layers on; without it the mem_* "
                                   "fields would be ignored");
        return std::nullopt;
    }
    for (const char* f : {"mem_share_ratio", "mem_key_expand_time", "mem_q_for_each_tucker_rank"})
        require(h.has(f), std::string(f) +
                              " is missing: a memory3 model's memory layers are UltraMemV2's (model_type "
                              "\"ultramem_v2\" fields), and a config without the V2 fields mem_share_ratio, "
                              "mem_key_expand_time and mem_q_for_each_tucker_rank is UltraMem V1's, which memory3 "
                              "does not read");
    return ultramem::read_memory_layers_config(h, layers, ultramem::Version::V2, "");
}

}  // namespace

Memory3Config read_config(const plugin::Host& h) {
    Memory3Config c;
    c.base = llama::read_config(h);
    const int64_t layers = c.base.layers;
    if (h.has("memory3"))
        require(!h.has("memory3.0") && !is_scalar(h, "memory3"),
                "field 'memory3' must be an object such as {\"memory_layers\": [0, 1], \"tokens_per_head\": 8}");
    // A misspelt field would silently be its default: refuse what we do not know.
    static const char* const kKnown[] = {"memory_layers",        "tokens_per_head", "reference_length",
                                         "chunk_length",         "references_per_chunk", "reference_bos",
                                         "reference_bos_ids",    "selection",       "retrieval_layer"};
    for (const std::string& key : h.keys("memory3")) {
        bool known = false;
        for (const char* k : kKnown) known |= key == k;
        std::string list;
        for (const char* k : kKnown) list += std::string(list.empty() ? "" : ", ") + k;
        require(known, "memory3." + key + " is not a Memory3 setting (known: " + list + ")");
    }

    c.memory_layers = read_memory_layers(h, layers);
    c.reference_length = int_field(h, "reference_length", c.reference_length);
    require(c.reference_length >= 1 && c.reference_length <= (int64_t{1} << 20),
            "memory3.reference_length must be in 1..2^20, got " + num(c.reference_length));
    c.tokens_per_head = int_field(h, "tokens_per_head", c.tokens_per_head);
    require(c.tokens_per_head >= 1 && c.tokens_per_head <= c.reference_length,
            "memory3.tokens_per_head (" + num(c.tokens_per_head) + ") must be in 1..reference_length (" +
                num(c.reference_length) + "): a memory keeps that many of a reference's tokens");
    c.chunk_length = int_field(h, "chunk_length", c.chunk_length);
    require(c.chunk_length >= 1 && c.chunk_length <= (int64_t{1} << 20),
            "memory3.chunk_length must be in 1..2^20, got " + num(c.chunk_length));
    c.references_per_chunk = int_field(h, "references_per_chunk", c.references_per_chunk);
    require(c.references_per_chunk >= 1 && c.references_per_chunk <= 1024,
            "memory3.references_per_chunk must be in 1..1024, got " + num(c.references_per_chunk));

    const std::string sel = h.get_string(field("selection").c_str(), "softmax");
    if (sel == "softmax")
        c.selection = Selection::Softmax;
    else if (sel == "exp_sum")
        c.selection = Selection::ExpSum;
    else
        require(false, "memory3.selection '" + sel + "' is not 'softmax' (the weights of §3.3) or 'exp_sum'");

    c.retrieval_layer = int_field(h, "retrieval_layer", std::max<int64_t>(1, layers / 4));
    require(c.retrieval_layer >= 0 && c.retrieval_layer <= layers,
            "memory3.retrieval_layer (" + num(c.retrieval_layer) + ") must be in 0..num_hidden_layers (" +
                num(layers) + "): the hidden state after that many layers");

    c.ultramem = read_ultramem_layers(h, layers);

    c.reference_bos = h.get_string(field("reference_bos").c_str(), c.reference_bos);
    c.prefix_ids = read_prefix_ids(h, c.reference_bos, c.base.vocab);

    // The context starts at RoPE position R (positions 0..R-1 are the memories'), so a model
    // trained on P positions leaves P - R to the context.
    if (c.base.max_positions > 0)
        require(c.base.max_positions > c.reference_length,
                "memory3.reference_length (" + num(c.reference_length) + ") leaves no context positions: " +
                    "max_position_embeddings is " + num(c.base.max_positions));
    return c;
}

std::string describe(const Memory3Config& c) {
    std::ostringstream s;
    s << "memory3 (llama";
    if (c.base.kv_heads != c.base.heads)
        s << " GQA " << c.base.heads << "/" << c.base.kv_heads;
    else
        s << " MHA " << c.base.heads;
    s << ", memory layer" << (c.memory_layers.size() > 1 ? "s " : " ");
    const bool contiguous = c.memory_layers.back() - c.memory_layers.front() + 1 ==
                            static_cast<int64_t>(c.memory_layers.size());
    if (contiguous && c.memory_layers.size() > 1) {
        s << c.memory_layers.front() << "-" << c.memory_layers.back();
    } else {
        for (size_t i = 0; i < c.memory_layers.size(); ++i) s << (i ? "," : "") << c.memory_layers[i];
    }
    s << ", " << c.tokens_per_head << " tokens/head, chunk " << c.chunk_length << ")";
    if (c.ultramem) s << "; UltraMemV2 " << ultramem::describe(*c.ultramem);
    return s.str();
}

}  // namespace mnemo::memory3
