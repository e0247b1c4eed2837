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

#define MNEMO_ABI_VERSION 5u

#if defined(_WIN32)
#define MNEMO_EXPORT __declspec(dllexport)
#else
#define MNEMO_EXPORT __attribute__((visibility("default")))
#endif

/* Element types. Room is left for block-quantized types (values >= 16). */
typedef enum mnemo_dtype {
    MNEMO_DTYPE_F32 = 0,
    MNEMO_DTYPE_F16 = 1,
    MNEMO_DTYPE_BF16 = 2,
    MNEMO_DTYPE_I32 = 3,
    MNEMO_DTYPE_COUNT_ = 4
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

/*
 * The op table. Inputs, parameters and output of each op; N is a row count (tokens), shapes in
 * numpy order. "float" means f32 activations. Weights (W, tables) may be F32, F16 or BF16 and are
 * always accumulated in f32. The engine checks every shape rule before a backend sees a node.
 *
 *  GET_ROWS   in: table[R,C] (f32/f16/bf16), idx[N] i32            out: [N,C] f32
 *  MATMUL     in: x[...,K] f32, W[M,K] (f32/f16/bf16)               out: [...,M] f32   y = x W^T
 *  ADD        in: a[...], b (shape equal to a trailing suffix of a)   out: a's shape    a + b
 *  MUL        in: a[...], b (suffix-broadcast as ADD)                out: a's shape    a * b
 *  SCALE      in: x                 f[0]=s                            out: x's shape    s * x
 *  RMS_NORM   in: x[...,D] [, w[D]] f[0]=eps                          out: x / sqrt(mean(x^2)+eps) * w
 *  LAYER_NORM in: x[...,D] [, w[D] [, b[D]]] f[0]=eps                 out: (x-mean)/sqrt(var+eps)*w+b
 *  ROPE       in: x[N,H,D] f32, pos[N] i32, inv_freq[R/2] f32
 *             i[0]=mode (0: rotate-half pairs (j, j+R/2), HF/NeoX; 1: interleaved pairs (2j, 2j+1))
 *             i[1]=R rotary dims (R <= D, even; dims >= R pass through)          out: x's shape
 *             i[2]=position offset o (optional, default 0; may be negative)
 *             angle(n, j) = (pos[n] + o) * inv_freq[j]   (the sum is exact: an integer)
 *  SILU       in: x                                                   out: x * sigmoid(x)
 *  GELU       in: x  i[0]=form (0: tanh approximation, default; 1: exact erf)   out: x's shape
 *             0: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)));  1: 0.5 x (1 + erf(x / sqrt(2)))
 *  SWIGLU     in: gate[...], up[...] (same shape)                     out: silu(gate) * up
 *  SOFTMAX    in: x[...,D]  f[0]=scale (0 means 1)                    out: softmax(scale*x) over D
 *  KV_STORE   in: cache[S,H,C,D] f32, src[N,H,D] f32, seq[N] i32, pos[N] i32
 *             writes cache[seq[n],:,pos[n],:] = src[n]; the output IS the cache (same buffer),
 *             so readers that take it as input are ordered after the write.
 *  ATTENTION  in: q[N,Hq,D], k_cache[S,Hkv,C,D], v_cache[S,Hkv,C,Dv], seq[N] i32, pos[N] i32
 *             f[0]=scale. Query n of head h reads k/v of sequence seq[n], head h/(Hq/Hkv),
 *             cache positions 0..pos[n] (causal).                 out: [N,Hq,Dv]
 *             Optional prefix (explicit memories, Memory3 eq. 4):
 *               [, pk[B,Hkv,M,D], pv[B,Hkv,M,Dv] f32, plen[B] i32 [, pblock[N] i32]]
 *             query n first attends to slots 0..plen[b]-1 of prefix block b = pblock[n] (b = 0
 *             for every query without pblock; pblock[n] < 0: no prefix for that query), then
 *             to its cache as above; ONE softmax over both parts. A plen[b] outside 0..M or a
 *             pblock[n] >= B is an error.
 *
 * Memory-layer ops (product-key memory / UltraMem / Memory+ value retrieval):
 *  ARGTOPK    in: x[...,D] f32  i[0]=k (1 <= k <= D)                 out: i32 [...,k]
 *             per row, the indices of the k largest values ordered by value, largest first.
 *             Ties go to the LOWER index first (the order a stable sort of -x gives), so the
 *             result is deterministic and identical on every backend. NaN ranks below every
 *             number (-inf included); -0.0 and +0.0 are equal (a tie).
 *  TAKE_ALONG in: x[...,D] f32, idx[...,k] i32 (same leading dims as x)   out: [...,k] f32
 *             out[..., j] = x[..., idx[..., j]]. An index outside 0..D-1 is an error.
 *  EMBEDDING_BAG in: table[R,C] (f32/f16/bf16), idx[N,m] i32, w[N,m] or w[N,m,P] f32
 *             i[0]=G groups (optional, default 1)                     out: [N, G*C] f32
 *             Entry j of bag n reads row r = idx % R of the table and adds into group
 *             g = idx / R (idx in 0..G*R-1; G = 1 is the plain bag):
 *               out[n, g*C + c] += w[n,j] * table[r, c]                    (w [N,m])
 *               out[n, g*C + c] += w[n,j,p] * table[r, c],  p = c / (C/P)  (w [N,m,P]: P "cores",
 *                                  core p weights its own contiguous C/P slice; P divides C)
 *             Accumulated in f32 or wider; m = 0 gives zeros; repeated indices add up. An index
 *             outside 0..G*R-1 is an error. The fused gather-weight-sum of a memory layer:
 *             no [N,m,C] intermediate is ever formed. Groups are UltraMem's implicit value
 *             expansion (IVE: out is [E virtual blocks][C], projected by one stacked matrix).
 *  PK_SCORE   in: q[N,Q,2,K] f32, keys[2H,Nk,K,Rk] (f32/f16/bf16) [, g[K] key-norm gain]
 *             i[0]=H memory heads, i[1]=s heads sharing one query (head h reads query h/s;
 *             needs Q >= ceil(H/s))  f[0]=eps (with g)                 out: [N, 2H, Nk, Rk] f32
 *             Sub-key scores of product-key memory; side t=0 rows, t=1 columns:
 *               S[n, 2h+t, j, r] = sum_d q[n, h/s, t, d] * k~[2h+t, j, d, r]
 *             k~ = keys, or with g: keys RMS-normalised over d (per 2h+t, j, r) times g[d]:
 *               k~[.., d, r] = k[.., d, r] / sqrt(mean_d k[.., d, r]^2 + eps) * g[d].
 *             No 1/sqrt(K) scaling. Rk is the Tucker rank (1 for additive product keys).
 *  PK_TOPK    in: S[N,2H,Nk,Rk] f32 (PK_SCORE) [, u[H,Rk], v[H,Rk], core_0[H,Rk,Rk], ...]
 *             i[0]=m candidates per side, i[1]=k selected  (1 <= m <= Nk, 1 <= k <= m*m)
 *                                                                     out: i32 [N, H, k]
 *             Two-stage product-key top-k per (token, head):
 *               stage 1: s1[j] = sum_r u[h,r] S[n,2h,j,r], s2[j] = sum_r v[h,r] S[n,2h+1,j,r]
 *                        (Rk = 1 without u, v: s1 = S[n,2h,:,0], s2 = S[n,2h+1,:,0]);
 *                        s1, s2 are summed exactly (or in double) and rounded ONCE to f32,
 *                        then ranked as f32 values, so every backend selects the same keys;
 *                        I1 = argtopk(s1, m), I2 = argtopk(s2, m) (ARGTOPK order and ties).
 *               stage 2: for the pair p = a*m + b (a, b in 0..m-1, i = I1[a], j = I2[b])
 *                        additive (no cores):   t(p) = s1[i] + s2[j]
 *                        Tucker (C >= 1 cores):  t(p) = sum_c S1[i,:] core_c[h] S2[j,:]^T
 *                        with S1 = S[n,2h], S2 = S[n,2h+1] (the full rank-Rk scores);
 *                        t is computed and ranked in double (s1 + s2 of two f32 is exact).
 *               out[n,h,:] = I1[a]*Nk + I2[b] for the k best pairs by t, best first, ties to
 *               the lower p. With cores, u and v are required; C = inputs - 3 (1..5).
 *  PK_PAIR_SCORES in: S[N,2H,Nk,Rk] f32, idx[N,H,k] i32 (virtual i*Nk+j) [, core_0, ...]
 *                                                                     out: [N, H, k, C] f32
 *             The scores of chosen pairs: additive (no cores, Rk = 1, C = 1):
 *               out = S[n,2h,i,0] + S[n,2h+1,j,0]; Tucker: out[..., c] = S1[i,:] core_c[h] S2[j,:]^T
 *             (per-core scores, not summed). An index outside 0..Nk*Nk-1 is an error.
 *  MEM_INDEX  in: v[...] i32 (virtual indices) [, shuffle[V] i32]
 *             i[0]=value_num, i[1]=offset, i[2]=A table rows, i[3]=G groups, i[4]=with_group
 *                                                                     out: i32, v's shape
 *             UltraMem's index pipeline: s = shuffle[v] (or v), g = s / value_num,
 *             row = (s % value_num + offset) % A;  out = with_group ? g*A + row : row.
 *             v outside 0..V-1 (with shuffle), a negative s, or g >= G is an error.
 *  PEER_GATE  in: table[R,P] (f32/f16/bf16), idx[N,m] i32, x[N,P] f32, s[N,m] or s[N,m,C] f32
 *             i[0]=activation (0 none, 1 GELU erf, 2 GELU tanh)       out: s's shape f32
 *               out[n,j,...] = act(table[idx[n,j] % R] . x[n]) * s[n,j,...]
 *             The PEER / UltraMemV2 pre-value gate: a per-entry scalar from a row dot product
 *             scales that entry's score(s). idx may carry a group (see EMBEDDING_BAG).
 *  HIVE       in: bank[R,r] (f32/f16/bf16), idx[N,H,m] i32, w[N,H,m] f32, proj[H,r,Dh] (weight)
 *                                                                     out: [N, H, Dh] f32
 *             Head-wise implicit value expansion (MIDUS eq. 4): a bag per head over the shared
 *             latent bank, realised by that head's projection:
 *               out[n,h,:] = (sum_j w[n,h,j] * bank[idx[n,h,j], :]) proj[h]
 *             An index outside 0..R-1 is an error.
 *  MOE_FFN    in: x[N,D] f32, idx[N,k] i32 experts, w[N,k] f32, gate[E,F,D], up[E,F,D],
 *             down[E,D,F] (weights)                                   out: [N, D] f32
 *               out[n] = sum_j w[n,j] * down[e] (silu(gate[e] x[n]) * (up[e] x[n])),  e = idx[n,j]
 *             The routed experts of a mixture-of-experts FFN (OLMoE / Mixtral); the router
 *             (matmul, softmax, argtopk, take_along) is built from other ops. An expert id
 *             outside 0..E-1 is an error.
 *
 * Explicit-memory ops (Memory3):
 *  ATTN_MASS  in: q[N,Hq,D] f32, k[N,Hkv,D] f32, seq[N] i32, pos[N] i32
 *             i[0]=mode (0: softmax weights, 1: exp of the scores), i[1]=first counted position
 *             f[0]=scale                                              out: [N, Hkv] f32
 *             The attention mass each key receives, with no causal mask and no positions in
 *             the scores (Memory3 §3.3 token selection). Token t is counted when seq[t] >= 0 and
 *             pos[t] >= i[1]; counted tokens of one sequence attend to each other (itself too):
 *               s_h(i, j) = scale * q[i,h] . k[j,g],  g = h / (Hq/Hkv)
 *               a_h(i, j) = exp(s_h(i,j)) / sum_{j' counted, seq j' = seq i} exp(s_h(i,j'))  (mode 0)
 *                         = exp(s_h(i,j))                                                 (mode 1)
 *               out[j, g] = sum_{h in group g} sum_{i counted, seq i = seq j} a_h(i, j)
 *             Uncounted tokens get 0. Quadratic in a sequence's tokens: for short references.
 *  VQ_DECODE  in: codes[N,W] i32, coarse[Mc, 2^bc, Do/Mc] f32, pq[Mp, 2^bp, Do/Mp] f32
 *             [, A[Do, Di] f32]   i[0]=bc coarse bits, i[1]=bp PQ bits
 *                                                   out: [N, Di] f32 (with A), [N, Do] without
 *             Decodes FAISS "OPQ,Residual<Mc>x<bc>,PQ<Mp>x<bp>" codes (Index2Layer behind an
 *             OPQ rotation). A code is a byte string stored little-endian in i32 words (byte i
 *             is bits 8*(i%4).. of word i/4; W >= ceil((cb+pb)/4), later bytes ignored):
 *               bytes [0, cb), cb = ceil(Mc*bc/8) <= 4: list = little-endian integer; coarse
 *                 index c_k = (list >> k*bc) & (2^bc - 1); list >= 2^(Mc*bc) is an error
 *               bytes [cb, cb+pb), pb = ceil(Mp*bp/8): an LSB-first bit stream; PQ index p_k
 *                 = bits [k*bp, (k+1)*bp)
 *               y[c] = pq[k, p_k, c - k*Do/Mp] + coarse[k', c_k', c - k'*Do/Mc]  (rotated space)
 *               x[i] = sum_{l = 0..Do-1, in this order} y[l] * A[l, i]   (x = A^T y; without A,
 *                      out = y). The CPU rounds each product and each sum to f32 (no FMA), which
 *                      is bit for bit what FAISS's sa_decode computes over reference BLAS.
 */
typedef enum mnemo_op {
    MNEMO_OP_NONE = 0,
    MNEMO_OP_GET_ROWS = 1,
    MNEMO_OP_MATMUL = 2,
    MNEMO_OP_ADD = 3,
    MNEMO_OP_MUL = 4,
    MNEMO_OP_SCALE = 5,
    MNEMO_OP_RMS_NORM = 6,
    MNEMO_OP_LAYER_NORM = 7,
    MNEMO_OP_ROPE = 8,
    MNEMO_OP_SILU = 9,
    MNEMO_OP_GELU = 10,
    MNEMO_OP_SWIGLU = 11,
    MNEMO_OP_SOFTMAX = 12,
    MNEMO_OP_KV_STORE = 13,
    MNEMO_OP_ATTENTION = 14,
    MNEMO_OP_ARGTOPK = 15,
    MNEMO_OP_TAKE_ALONG = 16,
    MNEMO_OP_EMBEDDING_BAG = 17,
    MNEMO_OP_PK_SCORE = 18,
    MNEMO_OP_PK_TOPK = 19,
    MNEMO_OP_PK_PAIR_SCORES = 20,
    MNEMO_OP_MEM_INDEX = 21,
    MNEMO_OP_PEER_GATE = 22,
    MNEMO_OP_HIVE = 23,
    MNEMO_OP_MOE_FFN = 24,
    MNEMO_OP_ATTN_MASS = 25,
    MNEMO_OP_VQ_DECODE = 26,
    MNEMO_OP_COUNT_ = 27
} mnemo_op;

/* The op's lower-case name ("matmul"), for messages in every module; "op?" when unknown. */
static inline const char* mnemo_op_name(int32_t op) {
    static const char* const names[MNEMO_OP_COUNT_] = {
        "none", "get_rows", "matmul", "add", "mul", "scale", "rms_norm", "layer_norm",
        "rope", "silu", "gelu", "swiglu", "softmax", "kv_store", "attention", "argtopk",
        "take_along", "embedding_bag", "pk_score", "pk_topk", "pk_pair_scores", "mem_index", "peer_gate",
        "hive", "moe_ffn", "attn_mass", "vq_decode",
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
