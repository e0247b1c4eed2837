/*
 * Model plugin ABI. A plugin is a shared library (libmnemo-plugin-<name>.so) that exports
 *
 *     MNEMO_EXPORT const mnemo_plugin_api* mnemo_plugin_entry(void);
 *
 * It declares which config.json "model_type" values it loads. A plugin knows models, never
 * backends: it reads the config through the host, declares the weights it expects (the engine
 * checks name, shape and dtype against the checkpoint), declares per-context state (KV caches)
 * and builds a graph of ops for a batch of N tokens. Plugins normally use the header-only C++
 * wrapper in mnemo/plugin.hpp rather than these structs directly.
 */
#ifndef MNEMO_PLUGIN_ABI_H
#define MNEMO_PLUGIN_ABI_H

#include "mnemo_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor handle inside one graph (or a weight/state/constant id); negative means invalid. */
typedef int32_t mnemo_tid;

/* Per-batch graph inputs the engine fills before every run (all I32, shape [N] or [n_out]). */
typedef enum mnemo_input_kind {
    MNEMO_INPUT_TOKENS = 0,    /* [N] token ids */
    MNEMO_INPUT_POSITIONS = 1, /* [N] position of each token in its sequence */
    MNEMO_INPUT_SEQ_IDS = 2,   /* [N] sequence slot (0..n_seq-1) of each token */
    MNEMO_INPUT_OUT_ROWS = 3,  /* [n_out] which of the N rows produce logits */
    MNEMO_INPUT_MEMORY_BLOCK = 4 /* [N] explicit-memory prefix block each row reads (-1: none) */
} mnemo_input_kind;

/* What a graph computes. LOGITS: the forward pass, output = logits (set_output). ENCODE: the
 * explicit-memory writer (Memory3 §3.3) over references laid out as sequences of
 * [prefix ids, reference tokens], positions 0.. in the model's encode cache; results are named
 * outputs (mark_output), see mnemo_memory_spec. ENCODE_QUERY: the same pass, cut after the
 * retrieval layer, with only the "hidden" output (retrieval vectors of query chunks). */
typedef enum mnemo_graph_purpose {
    MNEMO_GRAPH_LOGITS = 0,
    MNEMO_GRAPH_ENCODE = 1,
    MNEMO_GRAPH_ENCODE_QUERY = 2
} mnemo_graph_purpose;

#define MNEMO_MAX_PREFIX_IDS 32

/*
 * Explicit memories (Memory3): what a model that reads them tells the engine. The engine runs
 * the ENCODE graph to write memories and to compute the prefix (reference BOS) keys and values,
 * retrieves memories per chunk, and fills these states the plugin declared (names are part of
 * the contract; <l> is a decimal layer index, every layer 0..n_layers-1 has both):
 *   "memory.len" i32 [blocks]: valid slots of each block of the explicit-memory layers.
 *   "memory.k.<l>" [Bl, kv_heads, Sl, head_dim], "memory.v.<l>" [Bl, kv_heads, Sl, value_dim], both
 *       of the context's cache_dtype (f32, f16 or q8_0)
 *       Slots 0..n_prefix-1 of every block hold the prefix's keys/values of layer l. An
 *       explicit-memory layer has Bl = blocks and Sl = n_prefix + references_per_chunk * tokens_per_head; slots
 *       n_prefix.. hold the memories of the chunk the block serves. Other layers have Bl = 1,
 *       Sl = n_prefix.
 * ENCODE graph named outputs, for N rows: "k.<l>" [N, kv_heads, head_dim] keys after RoPE and
 * "v.<l>" [N, kv_heads, value_dim] for every layer; "mass.<l>" [N, kv_heads] (ATTN_MASS over the
 * reference tokens, prefix excluded) for every explicit-memory layer; "hidden" [N, retrieval_dim],
 * the hidden state after retrieval_layer layers (pooled by the engine over a reference's tokens).
 * ENCODE_QUERY: "hidden" alone.
 *
 * The sizes those declarations already carry are not repeated here: the engine reads the
 * explicit-memory layers, blocks, kv_heads, head_dim and value_dim from the states' shapes and
 * retrieval_dim from the "hidden" output, and refuses states that do not follow the contract.
 * What stays is the schedule, which no shape says.
 */
typedef struct mnemo_memory_spec {
    int32_t enabled; /* 1: the model reads explicit memories; every other field is then set */
    int32_t tokens_per_head;      /* tokens kept per kv head of a reference (>= 1) */
    int32_t reference_length;     /* most reference tokens (prefix not counted) */
    int32_t chunk_length;         /* context tokens per retrieval */
    int32_t references_per_chunk; /* most memories read by one chunk (>= 1) */
    int32_t encode_sequences;     /* most references in one ENCODE graph run */
    int32_t retrieval_layer;      /* "hidden" is the hidden state after this many layers */
    int32_t n_prefix;             /* prefix (reference BOS) token count */
    int32_t prefix_ids[MNEMO_MAX_PREFIX_IDS];
} mnemo_memory_spec;

/* Context parameters a plugin sizes its state with. */
typedef struct mnemo_context_params {
    int32_t n_ctx; /* positions per sequence */
    int32_t n_seq; /* independent sequences decoded together */
    /* mnemo dtype of every K/V cache state the plugin declares (its k/v caches, and Memory3's
     * explicit-memory "memory.k/v.<l>" and encode caches): MNEMO_DTYPE_F32, _F16 or _Q8_0.
     * KV_STORE rounds into it, ATTENTION reads it. Q8_0 needs a head dim that is a multiple of 32. */
    int32_t cache_dtype;
} mnemo_context_params;

/* Model facts the plugin reports after create(). */
typedef struct mnemo_model_info {
    int64_t vocab_size;
    int64_t n_ctx_train;  /* 0 when unknown */
    int64_t hidden_size;
    int64_t n_layers;
    char architecture[256]; /* human-readable, e.g. "llama (GQA 32/8, RoPE llama3)" */
    mnemo_memory_spec memory; /* zero unless the model reads explicit memories */
} mnemo_model_info;

/* What the host offers a plugin while it creates a model. All strings are UTF-8. */
typedef struct mnemo_host_api {
    void* host;

    /* config.json lookups by dotted path ("rope_scaling.factor", "eos_token_id"; a decimal step
     * indexes an array: "memory_anchors.1").
     * has: 1 present and not null, 0 absent/null. get_*: MNEMO_OK, or an error naming the
     * field and what was expected (also when absent). */
    int32_t (*config_has)(void* host, const char* path);
    mnemo_status (*config_int)(void* host, const char* path, int64_t* out, mnemo_error* err);
    mnemo_status (*config_float)(void* host, const char* path, double* out, mnemo_error* err);
    mnemo_status (*config_bool)(void* host, const char* path, int32_t* out, mnemo_error* err);
    /* Writes a NUL-terminated copy (truncated to cap) */
    mnemo_status (*config_string)(void* host, const char* path, char* out, size_t cap,
                                  mnemo_error* err);

    /* 1 when the checkpoint holds a tensor of that name. */
    int32_t (*has_weight)(void* host, const char* name);
    /* Declare an expected checkpoint tensor. dtype_mask: bit (1 << mnemo_dtype) per accepted
     * dtype. Fails with a message naming the tensor when it is missing or its shape/dtype differ. */
    mnemo_status (*declare_weight)(void* host, const char* name, uint32_t dtype_mask, int32_t ndim,
                                   const int64_t* shape, mnemo_tid* out, mnemo_error* err);
    /* A constant computed by the plugin (e.g. RoPE inverse frequencies); data is copied. */
    mnemo_status (*declare_constant)(void* host, const char* name, int32_t dtype, int32_t ndim,
                                     const int64_t* shape, const void* data, mnemo_tid* out,
                                     mnemo_error* err);
    /* Per-context state (KV caches), zero-initialised, kept across graph runs. The shape may use
     * the context params the host passed to create(). */
    mnemo_status (*declare_state)(void* host, const char* name, int32_t dtype, int32_t ndim,
                                  const int64_t* shape, mnemo_tid* out, mnemo_error* err);

    /* Declare `count` checkpoint tensors of one shape and dtype as ONE tensor [count, shape...]
     * (MoE experts stored one tensor per expert). The engine checks each like declare_weight and
     * copies them, in order, into one buffer it owns. ndim + 1 <= MNEMO_MAX_DIMS. */
    mnemo_status (*declare_weight_stack)(void* host, const char* const* names, int32_t count,
                                         uint32_t dtype_mask, int32_t ndim, const int64_t* shape,
                                         mnemo_tid* out, mnemo_error* err);
    /* Read a declared weight or constant at load time, converted to MNEMO_DTYPE_F32 or
     * MNEMO_DTYPE_I32 (`dtype`; I32 only from I32). `count` must equal its element count. For
     * checks (a stored permutation) and folding (BatchNorm statistics into a scale and shift). */
    mnemo_status (*read_weight)(void* host, mnemo_tid id, int32_t dtype, void* dst, int64_t count,
                                mnemo_error* err);
    /* Token ids of `text` with the checkpoint's tokenizer, special tokens written in the text
     * ("<s>") parsed, nothing added. Writes min(count, cap) ids and the count to *n_ids. */
    mnemo_status (*tokenize)(void* host, const char* text, int32_t* ids, int32_t cap, int32_t* n_ids,
                             mnemo_error* err);
    /* The member names of the config object at `path` ("" = the top level), in document order,
     * each followed by '\n', written NUL-terminated into out (truncated to cap). Returns the
     * number of members, or -1 when there is no object at path. For rejecting unknown fields. */
    int32_t (*config_keys)(void* host, const char* path, char* out, size_t cap);
} mnemo_host_api;

/* What the host offers a plugin while it builds a graph for one batch shape. */
typedef struct mnemo_builder_api {
    void* builder;
    int64_t n_tokens;  /* N */
    int64_t n_outputs; /* n_out */

    mnemo_tid (*input)(void* builder, int32_t kind /* mnemo_input_kind */);
    /* Weight, constant or state id from the host api -> tensor usable in this graph. */
    mnemo_tid (*param)(void* builder, mnemo_tid id);
    /* Add an op; the engine infers and checks the output shape. Returns < 0 on error, with the
     * reason available from last_error. */
    mnemo_tid (*op)(void* builder, int32_t op, int32_t n_inputs, const mnemo_tid* inputs,
                    int32_t n_iparams, const int64_t* iparams, int32_t n_fparams,
                    const float* fparams);
    /* Same data, new shape (element count must match). */
    mnemo_tid (*reshape)(void* builder, mnemo_tid t, int32_t ndim, const int64_t* shape);
    /* Mark the logits tensor [n_out, vocab] f32. */
    mnemo_status (*set_output)(void* builder, mnemo_tid t);
    const char* (*last_error)(void* builder);
    int32_t purpose; /* mnemo_graph_purpose */
    /* Keep tensor t readable after the run under `name` (ENCODE graphs). */
    mnemo_status (*mark_output)(void* builder, const char* name, mnemo_tid t);
} mnemo_builder_api;

typedef struct mnemo_plugin_api {
    uint32_t abi_version; /* MNEMO_ABI_VERSION */
    uint32_t struct_size;
    const char* name;               /* "llama" */
    const char* description;        /* one line */
    const char* const* model_types; /* NULL-terminated list of config.json model_type values */

    /* Read config, declare weights/constants/state, fill info. */
    mnemo_status (*create)(const mnemo_host_api* host, const mnemo_context_params* params,
                           mnemo_model_info* info, void** out_model, mnemo_error* err);
    /* Build the forward graph for b->n_tokens tokens; may be called many times. */
    mnemo_status (*build)(void* model, const mnemo_builder_api* b, mnemo_error* err);
    void (*destroy)(void* model);
} mnemo_plugin_api;

typedef const mnemo_plugin_api* (*mnemo_plugin_entry_fn)(void);
#define MNEMO_PLUGIN_ENTRY_SYMBOL "mnemo_plugin_entry"

#ifdef __cplusplus
}
#endif
#endif /* MNEMO_PLUGIN_ABI_H */
