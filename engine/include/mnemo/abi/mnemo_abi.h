/*
 * Mnemo C ABI: the types shared by the engine, backend modules and model plugins.
 *
 * Everything that crosses a shared-library boundary is declared here in plain C so that a
 * module built by another compiler (nvcc, a different libstdc++) can still be loaded. Numeric
 * values of the enums are part of the ABI: append, never renumber. Any incompatible change bumps
 * MNEMO_ABI_VERSION, and the loaders refuse modules built against another version.
 */
#ifndef MNEMO_ABI_H
#define MNEMO_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MNEMO_ABI_VERSION 7u  /* 7: mnemo_context_params.cache_dtype */

#if defined(_WIN32)
#define MNEMO_EXPORT __declspec(dllexport)
#else
#define MNEMO_EXPORT __attribute__((visibility("default")))
#endif

/*
 * Element types (0 .. MNEMO_DTYPE_COUNT_ - 1) and block-quantized types (MNEMO_DTYPE_QUANT_FIRST_ ..
 * MNEMO_DTYPE_QUANT_END_ - 1). A block-quantized tensor stores its innermost dimension in blocks
 * of consecutive weights, so that dimension is always a whole number of blocks and a row of n
 * weights takes n / (weights per block) * (bytes per block) bytes. The layouts are GGUF's (ggml's
 * ggml-common.h; engine/include/mnemo/quant/ggml_quants.hpp says how each block decodes); blocks
 * are packed, so an f16 inside a block may sit on any 2-byte boundary.
 */
typedef enum mnemo_dtype {
    MNEMO_DTYPE_F32 = 0,
    MNEMO_DTYPE_F16 = 1,
    MNEMO_DTYPE_BF16 = 2,
    MNEMO_DTYPE_I32 = 3,
    MNEMO_DTYPE_COUNT_ = 4, /* one past the element types */
    /* 32 weights in 34 bytes: f16 d, 32 x int8 q; w = d * q */
    MNEMO_DTYPE_Q8_0 = 16,
    /* 32 weights in 18 bytes: f16 d, 16 bytes of nibbles (byte j: weight j low, j + 16 high);
     * w = d * (q - 8) */
    MNEMO_DTYPE_Q4_0 = 17,
    /* 256 weights in 144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins of 8 sub-blocks
     * of 32, 128 bytes of nibbles; w = d * sc * q - dmin * m */
    MNEMO_DTYPE_Q4_K = 18,
    /* 256 weights in 176 bytes: Q4_K's layout with 32 bytes of fifth (high) bits before the nibbles */
    MNEMO_DTYPE_Q5_K = 19,
    /* 256 weights in 210 bytes: 128 bytes of low nibbles, 64 bytes of 2-bit highs, 16 x int8 scales
     * of sub-blocks of 16, f16 d; w = d * sc * (q - 32) */
    MNEMO_DTYPE_Q6_K = 20,
    MNEMO_DTYPE_QUANT_FIRST_ = MNEMO_DTYPE_Q8_0,
    MNEMO_DTYPE_QUANT_END_ = 21 /* one past the block-quantized types */
} mnemo_dtype;

typedef enum mnemo_status {
    MNEMO_OK = 0,
    MNEMO_ERR_INVALID = 1,     /* bad argument, shape or parameter */
    MNEMO_ERR_UNSUPPORTED = 2, /* op / dtype / feature not supported by this module */
    MNEMO_ERR_NO_MEMORY = 3,
    MNEMO_ERR_DEVICE = 4,      /* driver or device failure */
    MNEMO_ERR_IO = 5,
    MNEMO_ERR_CANCELLED = 6
} mnemo_status;

/* Error text filled by the callee; the caller owns the storage. */
typedef struct mnemo_error {
    char message[1024];
} mnemo_error;

#define MNEMO_MAX_DIMS 4
#define MNEMO_MAX_INPUTS 12
#define MNEMO_MAX_PARAMS 8

/*
 * A tensor as a backend sees it: always contiguous, row-major, shape listed outermost first
 * (numpy order; shape[ndim-1] is the fastest-varying dimension). `buffer` is the handle the
 * owning backend returned from buffer_alloc; for host backends it is the base address.
 */
typedef struct mnemo_tensor {
    void* buffer;
    uint64_t offset; /* bytes from the start of the buffer */
    int32_t dtype;   /* mnemo_dtype */
    int32_t ndim;    /* 1..MNEMO_MAX_DIMS */
    int64_t shape[MNEMO_MAX_DIMS];
} mnemo_tensor;

/* The ops: enum values, names and semantics are defined once, in mnemo_ops.def. */
typedef enum mnemo_op {
    MNEMO_OP_NONE = 0,
#define MNEMO_OP(id, value, name, family, min_inputs, max_inputs, aliases, category) MNEMO_OP_##id = value,
#include "mnemo_ops.def"
#undef MNEMO_OP
    MNEMO_OP_COUNT_ /* one past the last op (the list is dense: checked in engine/src/ops/op_table.cpp) */
} mnemo_op;

/* The op's lower-case name ("matmul"), for messages in every module; "op?" when unknown. */
static inline const char* mnemo_op_name(int32_t op) {
    static const char* const names[MNEMO_OP_COUNT_] = {
        "none",
#define MNEMO_OP(id, value, name, family, min_inputs, max_inputs, aliases, category) #name,
#include "mnemo_ops.def"
#undef MNEMO_OP
    };
    return (op >= 0 && op < MNEMO_OP_COUNT_) ? names[op] : "op?";
}

/* One op instance ready to run: its tensors are bound to backend buffers. */
typedef struct mnemo_node {
    int32_t op; /* mnemo_op */
    int32_t n_inputs;
    mnemo_tensor inputs[MNEMO_MAX_INPUTS];
    mnemo_tensor output;
    int64_t iparams[MNEMO_MAX_PARAMS];
    float fparams[MNEMO_MAX_PARAMS];
} mnemo_node;

#ifdef __cplusplus
}
#endif
#endif /* MNEMO_ABI_H */
