// MOE_FFN: the routed experts of a mixture-of-experts FFN,
//   out[n] = sum_j w[n,j] * down[e] (silu(gate[e] x[n]) * (up[e] x[n])),  e = idx[n,j].
//
// At decode and small batches the op is bound by how fast expert weights stream from memory, so
// the (token, choice) pairs are grouped by expert ("slots", expert-major) and every expert's
// gate, up and down matrices stream exactly once per batch, each weight band multiplied with all
// of that expert's tokens while it sits in L1 (the register tiles of MATMUL, dot.hpp).
//
// The op has three dependent phases per batch: gather the tokens' rows into slot order, compute
// the hidden rows h = w * silu(gate x) * (up x) of every slot (parallel over expert and hidden
// rows), then out = sum over slots of down h (parallel over output columns, so that no two
// threads ever add into the same output element, and the sum order is fixed). The thread pool
// has no barrier inside a job (a thread may run every task itself), so the phases are one queue
// of work items claimed in order from a shared counter; an item of a phase waits until every item
// before its phase has finished. That cannot deadlock: it only ever waits for items already
// claimed, and those never wait for later ones.
//
// Block-quantized experts (q8_0 ... q6_k) stay packed in memory: each band of up to 4 expert rows
// is decoded to f32 once into the thread's scratch (the dequantizers MATMUL's prefill uses) and
// the float tiles run on it, so what streams from memory is the packed rows.
//
// The slot rows (gathered x and h) live in shared scratch. Very large batches are cut into
// chunks of tokens so that this stays bounded; each chunk streams the expert weights once more.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "arch/x86/simd_avx2.hpp"
#include "dot.hpp"
#include "kernel_api.hpp"
#include "matmul_quant.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/ops/dtype.hpp"
#include "mnemo/quant/ggml_quants.hpp"
#include "scalar_math.hpp"

namespace mnemo_cpu {
namespace {

// Shared scratch for the slot rows of one chunk (gathered x and hidden rows): 8 MiB. A chunk of
// OLMoE-sized experts (D 2048, F 1024, k 8) still holds 85 tokens.
constexpr int64_t kSharedFloats = int64_t{1} << 21;
constexpr int64_t kGatherSlots = 32;   // slot rows copied per gather item
constexpr int64_t kRowGrain = 12;      // hidden / output rows per item: a multiple of both tile heights (4, 3)
constexpr int64_t kTileFloats = 16;    // one register tile's results (at most 4 x 4)

struct MoeShape {
    const float* x;
    const int32_t* idx;
    const float* w;
    const void* gate;
    const void* up;
    const void* down;
    float* out;
    int32_t gate_dt, up_dt, down_dt;
    int64_t n_tok, dim, k, experts, hidden;
    int64_t chunk_tokens;  // tokens per chunk
};

MoeShape moe_shape(const PreparedNode& p) {
    const mnemo_node& n = p.node;
    MoeShape s;
    s.x = static_cast<const float*>(p.in[0]);
    s.idx = static_cast<const int32_t*>(p.in[1]);
    s.w = static_cast<const float*>(p.in[2]);
    s.gate = p.in[3];
    s.up = p.in[4];
    s.down = p.in[5];
    s.out = static_cast<float*>(p.out);
    s.gate_dt = n.inputs[3].dtype;
    s.up_dt = n.inputs[4].dtype;
    s.down_dt = n.inputs[5].dtype;
    s.n_tok = n.inputs[0].shape[0];
    s.dim = n.inputs[0].shape[1];
    s.k = n.inputs[1].shape[1];
    s.experts = n.inputs[3].shape[0];
    s.hidden = n.inputs[3].shape[1];
    const int64_t per_token = std::max<int64_t>(1, s.k * (s.dim + s.hidden));
    s.chunk_tokens = std::clamp<int64_t>(kSharedFloats / per_token, 1, std::max<int64_t>(1, s.n_tok));
    return s;
}

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// Scratch: [shared: x rows | h rows of a chunk's slots] at the start of the whole area, then in
// each thread's own share, after the shared part, that thread's copy of the chunk's grouping.
struct SharedRows {
    float* x;  // [slots, D]
    float* h;  // [slots, F]
};

int64_t shared_floats(const MoeShape& s) { return round_up(s.chunk_tokens * s.k * (s.dim + s.hidden), 16); }

struct Grouping {
    int32_t* slot_token;  // token of each slot (slots are expert-major, then token, then choice)
    float* slot_w;        // router weight of each slot
    int32_t* start;       // [E + 1] first slot of each expert
    int32_t* active;      // experts with at least one slot, ascending
    int32_t* cursor;      // [E] fill position while grouping
    float* tile_a;        // tile results
    float* tile_b;
    float* rows_a;        // up to 4 decoded rows of a block-quantized expert (gate or down)
    float* rows_b;        // ... and of up
    int64_t n_active;
};

// Floats of one decoded band: 4 rows of the longer of D and F (0 when no expert is quantized).
int64_t decoded_band_floats(const MoeShape& s) {
    const bool any = mnemo::dtype_is_quantized(static_cast<mnemo::DType>(s.gate_dt)) ||
                     mnemo::dtype_is_quantized(static_cast<mnemo::DType>(s.up_dt)) ||
                     mnemo::dtype_is_quantized(static_cast<mnemo::DType>(s.down_dt));
    return any ? round_up(4 * std::max(s.dim, s.hidden), 16) : 0;
}

size_t private_floats(const MoeShape& s) {
    return static_cast<size_t>(2 * decoded_band_floats(s) + 2 * s.chunk_tokens * s.k + 3 * s.experts + 1 + 2 * kTileFloats + 16);
}

Grouping grouping_scratch(float* own, const MoeShape& s) {
    Grouping g;
    const int64_t slots = s.chunk_tokens * s.k;
    g.rows_a = own;
    g.rows_b = own + decoded_band_floats(s);
    own += 2 * decoded_band_floats(s);
    g.tile_a = own;
    g.tile_b = own + kTileFloats;
    g.slot_w = own + 2 * kTileFloats;
    g.slot_token = reinterpret_cast<int32_t*>(g.slot_w + slots);
    g.start = g.slot_token + slots;
    g.active = g.start + s.experts + 1;
    g.cursor = g.active + s.experts;
    g.n_active = 0;
    return g;
}

// The chunk's slots grouped by expert (a counting sort; stable, so slots of one expert are in
// token order and the result never depends on threads).
void group_chunk(const MoeShape& s, int64_t n0, int64_t n1, Grouping& g) {
    std::fill(g.cursor, g.cursor + s.experts, 0);
    for (int64_t i = n0 * s.k; i < n1 * s.k; ++i) ++g.cursor[s.idx[i]];
    g.start[0] = 0;
    g.n_active = 0;
    for (int64_t e = 0; e < s.experts; ++e) {
        if (g.cursor[e] > 0) g.active[g.n_active++] = static_cast<int32_t>(e);
        g.start[e + 1] = g.start[e] + g.cursor[e];
        g.cursor[e] = g.start[e];
    }
    for (int64_t n = n0; n < n1; ++n)
        for (int64_t j = 0; j < s.k; ++j) {
            const int32_t slot = g.cursor[s.idx[n * s.k + j]]++;
            g.slot_token[slot] = static_cast<int32_t>(n);
            g.slot_w[slot] = s.w[n * s.k + j];
        }
}

// The work items of one chunk: gather, hidden (per active expert, F in blocks), output (D in blocks).
struct ChunkPlan {
    int64_t n0, n1, slots;
    int64_t hidden_block, hidden_blocks;  // per active expert
    int64_t out_block;
    int64_t n_gather, n_hidden, n_out;
    int64_t total() const { return n_gather + n_hidden + n_out; }
};

// Blocks of rows sized for about four items per thread, in multiples of kRowGrain.
int64_t row_block(int64_t rows_total, int64_t rows, int nth) {
    const int64_t want = (rows_total + 4 * nth - 1) / (4 * static_cast<int64_t>(nth));
    return std::min(std::max<int64_t>(1, rows), round_up(std::max<int64_t>(1, want), kRowGrain));
}

ChunkPlan plan_chunk(const MoeShape& s, int64_t chunk, const Grouping& g, int nth) {
    ChunkPlan c;
    c.n0 = chunk * s.chunk_tokens;
    c.n1 = std::min(s.n_tok, c.n0 + s.chunk_tokens);
    c.slots = (c.n1 - c.n0) * s.k;
    c.hidden_block = row_block(g.n_active * s.hidden, s.hidden, nth);
    c.hidden_blocks = (s.hidden + c.hidden_block - 1) / c.hidden_block;
    c.out_block = row_block(s.dim, s.dim, nth);
    c.n_gather = (c.slots + kGatherSlots - 1) / kGatherSlots;
    c.n_hidden = g.n_active * c.hidden_blocks;
    c.n_out = (s.dim + c.out_block - 1) / c.out_block;
    return c;
}

// ------------------------------------------------------------------ tiles

// y[t * ldy + r] = x[t] . w[r] for t < nr activation rows and r < mr weight rows of length kdim.
template <int DT>
void tile_scalar(int mr, int nr, const float* x, int64_t ldx, const void* w, int64_t ldw, float* y, int64_t ldy,
                 int64_t kdim) {
    for (int r = 0; r < mr; ++r) {
        const size_t base = static_cast<size_t>(r * ldw);
        for (int t = 0; t < nr; ++t) {
            const float* xr = x + t * ldx;
            float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            int64_t d = 0;
            for (; d + 4 <= kdim; d += 4) {
                a0 += xr[d] * weight_at<DT>(w, base + static_cast<size_t>(d));
                a1 += xr[d + 1] * weight_at<DT>(w, base + static_cast<size_t>(d + 1));
                a2 += xr[d + 2] * weight_at<DT>(w, base + static_cast<size_t>(d + 2));
                a3 += xr[d + 3] * weight_at<DT>(w, base + static_cast<size_t>(d + 3));
            }
            for (; d < kdim; ++d) a0 += xr[d] * weight_at<DT>(w, base + static_cast<size_t>(d));
            y[t * ldy + r] = (a0 + a1) + (a2 + a3);
        }
    }
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)
template <int DT>
MNEMO_AVX2 void tile_avx2_any(int mr, int nr, const float* x, int64_t ldx, const void* w, int64_t ldw, float* y,
                              int64_t ldy, int64_t kdim) {
    switch (mr) {
        case 4: return avx2::tile_rows_avx2<DT, 4>(nr, x, ldx, w, ldw, y, ldy, 0, kdim, false);
        case 3: return avx2::tile_rows_avx2<DT, 3>(nr, x, ldx, w, ldw, y, ldy, 0, kdim, false);
        default: return avx2::tile_rows_avx2<DT, 1>(nr, x, ldx, w, ldw, y, ldy, 0, kdim, false);
    }
}
#endif

void tile(bool avx2, int32_t dtype, int mr, int nr, const float* x, int64_t ldx, const void* w, int64_t ldw, float* y,
          int64_t ldy, int64_t kdim) {
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (avx2) {
        switch (dtype) {
            case MNEMO_DTYPE_F16: return tile_avx2_any<MNEMO_DTYPE_F16>(mr, nr, x, ldx, w, ldw, y, ldy, kdim);
            case MNEMO_DTYPE_BF16: return tile_avx2_any<MNEMO_DTYPE_BF16>(mr, nr, x, ldx, w, ldw, y, ldy, kdim);
            default: return tile_avx2_any<MNEMO_DTYPE_F32>(mr, nr, x, ldx, w, ldw, y, ldy, kdim);
        }
    }
#endif
    (void)avx2;
    switch (dtype) {
        case MNEMO_DTYPE_F16: return tile_scalar<MNEMO_DTYPE_F16>(mr, nr, x, ldx, w, ldw, y, ldy, kdim);
        case MNEMO_DTYPE_BF16: return tile_scalar<MNEMO_DTYPE_BF16>(mr, nr, x, ldx, w, ldw, y, ldy, kdim);
        default: return tile_scalar<MNEMO_DTYPE_F32>(mr, nr, x, ldx, w, ldw, y, ldy, kdim);
    }
}

// Tile shape for an expert with `tokens` slots: like MATMUL, 4 weight rows against 1-2 token rows
// when streaming dominates, 3 x 4 when there are enough tokens to reuse each weight band.
struct TileShape {
    int mr, nr;
};
TileShape tile_shape(int64_t tokens) { return tokens <= 2 ? TileShape{4, 2} : TileShape{3, 4}; }

// Bytes before `elements` weights of an expert tensor (a whole number of rows, so of blocks).
size_t weight_offset(int32_t dtype, int64_t elements) {
    return static_cast<size_t>(dtype_row_bytes(dtype, elements));
}

// A band of `rows` expert rows of length `len` starting at `w`: as it is when it is a float type;
// a block-quantized band is decoded into `buf` and becomes f32.
const void* float_band(bool avx2, int32_t* dtype, const void* w, int rows, int64_t len, float* buf) {
    if (!mnemo::dtype_is_quantized(static_cast<mnemo::DType>(*dtype))) return w;
    const quant::DequantizeFn decode = quant::dequantizer(avx2, *dtype);
    const size_t row_bytes = weight_offset(*dtype, len);
    for (int r = 0; r < rows; ++r) decode(static_cast<const char*>(w) + static_cast<size_t>(r) * row_bytes, buf + r * len, len);
    *dtype = MNEMO_DTYPE_F32;
    return buf;
}

#if defined(MNEMO_HAVE_AVX2_KERNELS)
MNEMO_AVX2 void avx2_swiglu16(float* g, const float* u, int count) {
    for (int i = 0; i < count; i += 8) {
        const __m256i mask = avx2::tail_mask(count - i);
        const __m256 gv = _mm256_maskload_ps(g + i, mask);
        const __m256 uv = _mm256_maskload_ps(u + i, mask);
        const __m256 denom = _mm256_add_ps(_mm256_set1_ps(1.0f), avx2::exp8(_mm256_sub_ps(_mm256_setzero_ps(), gv)));
        _mm256_maskstore_ps(g + i, mask, _mm256_mul_ps(_mm256_div_ps(gv, denom), uv));
    }
}
#endif

// silu(g) * u for the first `count` (<= 16) values of a tile.
void swiglu_tile(bool avx2, float* g, const float* u, int count) {
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (avx2) return avx2_swiglu16(g, u, count);
#endif
    (void)avx2;
    for (int i = 0; i < count; ++i) g[i] = silu_scalar(g[i]) * u[i];
}

// ------------------------------------------------------------------ the three phases

void gather_item(const MoeShape& s, const ChunkPlan& c, const Grouping& g, const SharedRows& sh, int64_t item) {
    const int64_t s0 = item * kGatherSlots, s1 = std::min(c.slots, s0 + kGatherSlots);
    for (int64_t slot = s0; slot < s1; ++slot)
        std::memcpy(sh.x + slot * s.dim, s.x + static_cast<int64_t>(g.slot_token[slot]) * s.dim,
                    static_cast<size_t>(s.dim) * sizeof(float));
}

// h[slot, f] = w[slot] * silu(gate[e, f] . x[slot]) * (up[e, f] . x[slot]) for one expert's slots
// and one block of hidden rows.
void hidden_item(bool avx2, const MoeShape& s, const ChunkPlan& c, const Grouping& g, const SharedRows& sh,
                 int64_t item) {
    const int64_t e = g.active[item / c.hidden_blocks];
    const int64_t f0 = (item % c.hidden_blocks) * c.hidden_block, f1 = std::min(s.hidden, f0 + c.hidden_block);
    const int64_t first = g.start[e], tokens = g.start[e + 1] - first;
    const TileShape ts = tile_shape(tokens);
    const float* xs = sh.x + first * s.dim;
    float* hs = sh.h + first * s.hidden;
    for (int64_t f = f0; f < f1;) {
        const int mr = f1 - f >= ts.mr ? ts.mr : 1;
        int32_t gdt = s.gate_dt, udt = s.up_dt;
        const void* gw = float_band(avx2, &gdt, static_cast<const char*>(s.gate) + weight_offset(gdt, (e * s.hidden + f) * s.dim), mr,
                                    s.dim, g.rows_a);
        const void* uw = float_band(avx2, &udt, static_cast<const char*>(s.up) + weight_offset(udt, (e * s.hidden + f) * s.dim), mr,
                                    s.dim, g.rows_b);
        for (int64_t t0 = 0; t0 < tokens; t0 += ts.nr) {
            const int nr = static_cast<int>(std::min<int64_t>(ts.nr, tokens - t0));
            tile(avx2, gdt, mr, nr, xs + t0 * s.dim, s.dim, gw, s.dim, g.tile_a, mr, s.dim);
            tile(avx2, udt, mr, nr, xs + t0 * s.dim, s.dim, uw, s.dim, g.tile_b, mr, s.dim);
            swiglu_tile(avx2, g.tile_a, g.tile_b, nr * mr);
            for (int t = 0; t < nr; ++t) {
                const float wt = g.slot_w[first + t0 + t];
                for (int r = 0; r < mr; ++r) hs[(t0 + t) * s.hidden + f + r] = wt * g.tile_a[t * mr + r];
            }
        }
        f += mr;
    }
}

// out[n, d] for one block of output columns d and the chunk's tokens: sum over the active experts
// (ascending) of down[e, d] . h[slot] for each slot of the token.
void output_item(bool avx2, const MoeShape& s, const ChunkPlan& c, const Grouping& g, const SharedRows& sh,
                 int64_t item) {
    const int64_t d0 = item * c.out_block, d1 = std::min(s.dim, d0 + c.out_block);
    for (int64_t n = c.n0; n < c.n1; ++n) std::fill(s.out + n * s.dim + d0, s.out + n * s.dim + d1, 0.0f);
    for (int64_t a = 0; a < g.n_active; ++a) {
        const int64_t e = g.active[a], first = g.start[e], tokens = g.start[e + 1] - first;
        const TileShape ts = tile_shape(tokens);
        const float* hs = sh.h + first * s.hidden;
        for (int64_t d = d0; d < d1;) {
            const int mr = d1 - d >= ts.mr ? ts.mr : 1;
            int32_t ddt = s.down_dt;
            const void* dw = float_band(avx2, &ddt, static_cast<const char*>(s.down) + weight_offset(ddt, (e * s.dim + d) * s.hidden), mr,
                                        s.hidden, g.rows_a);
            for (int64_t t0 = 0; t0 < tokens; t0 += ts.nr) {
                const int nr = static_cast<int>(std::min<int64_t>(ts.nr, tokens - t0));
                tile(avx2, ddt, mr, nr, hs + t0 * s.hidden, s.hidden, dw, s.hidden, g.tile_a, mr, s.hidden);
                for (int t = 0; t < nr; ++t) {
                    float* y = s.out + static_cast<int64_t>(g.slot_token[first + t0 + t]) * s.dim + d;
                    for (int r = 0; r < mr; ++r) y[r] += g.tile_a[t * mr + r];
                }
            }
            d += mr;
        }
    }
}

// ------------------------------------------------------------------ the work queue

// The node's counter holds two numbers: claimed items in the low 32 bits, finished items in the
// high 32 bits (one atomic, so a claim never races with a completion).
constexpr int64_t kDoneUnit = int64_t{1} << 32;

void wait_until_done(std::atomic<int64_t>& counter, int64_t items) {
    for (int spins = 0; (counter.load(std::memory_order_acquire) >> 32) < items; ++spins) {
        if (spins < 256) {
#if defined(__x86_64__) || defined(__i386__)
            _mm_pause();
#endif
        } else {
            std::this_thread::yield();  // the thread holding an earlier item was preempted
        }
    }
}

template <bool AVX2>
void moe_kernel(const KernelCall& call, int ith, int nth) {
    const PreparedNode& p = *call.node;
    const MoeShape s = moe_shape(p);
    const int64_t shared = shared_floats(s);
    const SharedRows sh{call.scratch, call.scratch + s.chunk_tokens * s.k * s.dim};
    Grouping g = grouping_scratch(call.scratch + static_cast<size_t>(ith) * call.scratch_stride + shared, s);
    const int64_t n_chunks = (s.n_tok + s.chunk_tokens - 1) / s.chunk_tokens;
    std::atomic<int64_t>& counter = *call.next_task;
    int64_t chunk = -1, base = 0;
    ChunkPlan c{};
    for (;;) {
        const int64_t item = counter.fetch_add(1, std::memory_order_acq_rel) & (kDoneUnit - 1);
        // Every thread walks the chunks in order, grouping each one itself, up to the claimed item.
        while (chunk < 0 || item >= base + c.total()) {
            if (chunk >= 0) base += c.total();
            if (++chunk >= n_chunks) return;  // every item has been claimed
            group_chunk(s, chunk * s.chunk_tokens, std::min(s.n_tok, (chunk + 1) * s.chunk_tokens), g);
            c = plan_chunk(s, chunk, g, nth);
        }
        int64_t local = item - base;
        if (local < c.n_gather) {
            wait_until_done(counter, base);  // the previous chunk may still read the shared rows
            gather_item(s, c, g, sh, local);
        } else if ((local -= c.n_gather) < c.n_hidden) {
            wait_until_done(counter, base + c.n_gather);
            hidden_item(AVX2, s, c, g, sh, local);
        } else {
            wait_until_done(counter, base + c.n_gather + c.n_hidden);
            output_item(AVX2, s, c, g, sh, local - c.n_hidden);
        }
        counter.fetch_add(kDoneUnit, std::memory_order_acq_rel);
    }
}

}  // namespace

KernelFn select_moe(PreparedNode& p, Isa isa) {
    const MoeShape s = moe_shape(p);
    p.scratch_floats = static_cast<size_t>(shared_floats(s)) + private_floats(s);
#if defined(MNEMO_HAVE_AVX2_KERNELS)
    if (isa == Isa::Avx2) return moe_kernel<true>;
#endif
    (void)isa;
    return moe_kernel<false>;
}

bool check_moe_indices(const PreparedNode& p, char* message, size_t cap) {
    const int32_t* idx = static_cast<const int32_t*>(p.in[1]);
    const int64_t count = numel(p.node.inputs[1]), k = p.node.inputs[1].shape[1], experts = p.node.inputs[3].shape[0];
    for (int64_t i = 0; i < count; ++i)
        if (idx[i] < 0 || idx[i] >= experts) {
            std::snprintf(message, cap, "moe_ffn: token %lld choice %lld is expert %d, outside 0..%lld",
                          static_cast<long long>(i / k), static_cast<long long>(i % k), idx[i],
                          static_cast<long long>(experts - 1));
            return false;
        }
    return true;
}

// Three F x D matrix-vector products per (token, choice).
double moe_work(const mnemo_node& n) {
    return 3.0 * static_cast<double>(numel(n.inputs[1])) * static_cast<double>(n.inputs[3].shape[1]) *
           static_cast<double>(n.inputs[3].shape[2]);
}

void register_moe_kernels() { register_kernel(MNEMO_OP_MOE_FFN, {select_moe, moe_work, check_moe_indices}); }

}  // namespace mnemo_cpu
