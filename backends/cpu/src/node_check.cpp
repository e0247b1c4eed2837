#include "node_check.hpp"

#include <climits>
#include <cstdio>
#include <string>

namespace mnemo_cpu {
namespace {

struct Arity {
    int32_t min, max;
};

constexpr Arity kArity[MNEMO_OP_COUNT_] = {
    {0, 0}, {2, 2}, {2, 2}, {2, 2}, {2, 2}, {1, 1}, {1, 2}, {1, 3},
    {3, 3}, {1, 1}, {1, 1}, {2, 2}, {1, 1}, {4, 4}, {5, 9}, {1, 1},
    {2, 2}, {3, 3}, {2, 3}, {1, 8}, {2, 7}, {1, 2}, {4, 4}, {4, 4},
    {6, 6}, {4, 4}, {3, 4},
};

bool check_op(const mnemo_node& n, Checker& c) {
    const mnemo_tensor* in = n.inputs;
    switch (n.op) {
        case MNEMO_OP_GET_ROWS: {
            if (!c.weight(0, 2, "2-D f32/f16/bf16 table [R, C]")) return false;
            if (!c.i32_vec(1, in[1].ndim == 1 ? in[1].shape[0] : -1, "row indices")) return false;
            mnemo_tensor o = in[0];
            o.shape[0] = in[1].shape[0];
            return c.output(o);
        }
        case MNEMO_OP_MATMUL: {
            if (!c.f32(0, 1, 4, "1..4-D f32 activations [..., K]") || !c.weight(1, 2, "2-D f32/f16/bf16 weight [M, K]"))
                return false;
            if (in[1].shape[1] != in[0].shape[in[0].ndim - 1]) return c.fail("inner dimensions differ");
            mnemo_tensor o = in[0];
            o.shape[o.ndim - 1] = in[1].shape[0];
            return c.output(o);
        }
        case MNEMO_OP_ADD:
        case MNEMO_OP_MUL:
            if (!c.f32(0, 1, 4, "f32 a") || !c.f32(1, 1, 4, "f32 b")) return false;
            if (!suffix_of(in[0], in[1])) return c.fail("b must equal a trailing part of a's shape");
            if (in[1].ndim >= 1) {
                int64_t nb = 1;
                for (int32_t i = 0; i < in[1].ndim; ++i) nb *= in[1].shape[i];
                int64_t na = 1;
                for (int32_t i = 0; i < in[0].ndim; ++i) na *= in[0].shape[i];
                if (nb == 0 && na != 0) return c.fail("b is empty");
            }
            return c.output(in[0]);
        case MNEMO_OP_GELU:
            if (n.iparams[0] != 0 && n.iparams[0] != 1) return c.fail("form i[0] must be 0 (tanh) or 1 (erf)");
            return c.f32(0, 1, 4, "f32 x") && c.output(in[0]);
        case MNEMO_OP_SCALE:
        case MNEMO_OP_SILU:
        case MNEMO_OP_SOFTMAX:
            return c.f32(0, 1, 4, "f32 x") && c.output(in[0]);
        case MNEMO_OP_SWIGLU:
            if (!c.f32(0, 1, 4, "f32 gate") || !c.f32(1, 1, 4, "f32 up")) return false;
            if (!same_shape(in[0], in[1])) return c.fail("gate and up differ in shape");
            return c.output(in[0]);
        case MNEMO_OP_RMS_NORM:
        case MNEMO_OP_LAYER_NORM: {
            if (!c.f32(0, 1, 4, "f32 x [..., D]")) return false;
            for (int i = 1; i < n.n_inputs; ++i) {
                if (!c.weight(i, 1, "1-D f32/f16/bf16 weight or bias [D]")) return false;
                if (in[i].shape[0] != in[0].shape[in[0].ndim - 1]) return c.fail("weight/bias length differs from D");
            }
            if (!(n.fparams[0] >= 0.0f)) return c.fail("eps must be >= 0");
            return c.output(in[0]);
        }
        case MNEMO_OP_ROPE: {
            if (!c.f32(0, 3, 3, "3-D f32 x [N, H, D]") || !c.i32_vec(1, in[0].shape[0], "positions") ||
                !c.f32(2, 1, 1, "1-D f32 inverse frequencies"))
                return false;
            const int64_t mode = n.iparams[0], rot = n.iparams[1];
            if (mode != 0 && mode != 1) return c.fail("mode must be 0 or 1");
            if (rot <= 0 || rot % 2 != 0 || rot > in[0].shape[2]) return c.fail("rotary dims must be even and <= D");
            if (in[2].shape[0] != rot / 2) return c.fail("inverse frequencies must hold R/2 values");
            // The engine's bound on the position offset i[2] (the kernel sums in int64 anyway).
            if (n.iparams[2] < -(int64_t{1} << 30) || n.iparams[2] > (int64_t{1} << 30))
                return c.fail("position offset must be in -2^30..2^30");
            return c.output(in[0]);
        }
        case MNEMO_OP_KV_STORE: {
            if (!c.f32(0, 4, 4, "4-D f32 cache [S, H, C, D]") || !c.f32(1, 3, 3, "3-D f32 src [N, H, D]")) return false;
            if (in[1].shape[1] != in[0].shape[1] || in[1].shape[2] != in[0].shape[3])
                return c.fail("src does not fit the cache");
            if (!c.i32_vec(2, in[1].shape[0], "sequence ids") || !c.i32_vec(3, in[1].shape[0], "positions"))
                return false;
            // The output is the cache itself: same tensor, same place.
            if (n.output.buffer != in[0].buffer || n.output.offset != in[0].offset)
                return c.fail("output must be the cache tensor (input 0)");
            return c.output(in[0]);
        }
        case MNEMO_OP_ATTENTION: {
            if (!c.f32(0, 3, 3, "3-D f32 q [N, Hq, D]") || !c.f32(1, 4, 4, "4-D f32 k cache [S, Hkv, C, D]") ||
                !c.f32(2, 4, 4, "4-D f32 v cache [S, Hkv, C, Dv]") || !c.i32_vec(3, in[0].shape[0], "sequence ids") ||
                !c.i32_vec(4, in[0].shape[0], "positions"))
                return false;
            if (in[1].shape[3] != in[0].shape[2]) return c.fail("q and k head dims differ");
            if (in[1].shape[0] != in[2].shape[0] || in[1].shape[1] != in[2].shape[1] || in[1].shape[2] != in[2].shape[2])
                return c.fail("k and v caches disagree");
            if (in[1].shape[1] <= 0 || in[0].shape[1] % in[1].shape[1] != 0)
                return c.fail("query heads must be a multiple of kv heads");
            if (n.n_inputs == 6 || n.n_inputs == 7) return c.fail("a prefix needs pk, pv and plen (inputs 5..7)");
            if (n.n_inputs >= 8) {  // the prefix: pk[B, Hkv, M, D], pv[B, Hkv, M, Dv], plen[B] [, pblock[N]]
                if (!c.f32(5, 4, 4, "4-D f32 prefix keys [B, Hkv, M, D]") || !c.f32(6, 4, 4, "4-D f32 prefix values [B, Hkv, M, Dv]") ||
                    !c.i32_vec(7, in[5].shape[0], "prefix lengths"))
                    return false;
                if (in[5].shape[1] != in[1].shape[1] || in[5].shape[3] != in[1].shape[3])
                    return c.fail("prefix keys differ from the k cache in heads or head dim");
                if (in[6].shape[0] != in[5].shape[0] || in[6].shape[1] != in[5].shape[1] || in[6].shape[2] != in[5].shape[2] ||
                    in[6].shape[3] != in[2].shape[3])
                    return c.fail("prefix values do not match the prefix keys and the v cache");
                if (n.n_inputs == 9) {
                    if (!c.i32_vec(8, in[0].shape[0], "prefix block of each query")) return false;
                } else if (in[5].shape[0] != 1) {
                    return c.fail("without a block per query (input 8) the prefix must have 1 block");
                }
            }
            mnemo_tensor o = in[0];
            o.shape[2] = in[2].shape[3];
            return c.output(o);
        }
        case MNEMO_OP_ATTN_MASS: {
            if (!c.f32(0, 3, 3, "3-D f32 q [N, Hq, D]") || !c.f32(1, 3, 3, "3-D f32 k [N, Hkv, D]") ||
                !c.i32_vec(2, in[0].shape[0], "sequence ids") || !c.i32_vec(3, in[0].shape[0], "positions"))
                return false;
            if (in[1].shape[0] != in[0].shape[0] || in[1].shape[2] != in[0].shape[2])
                return c.fail("q and k need the same rows and head dim");
            if (in[1].shape[1] <= 0 || in[0].shape[1] % in[1].shape[1] != 0)
                return c.fail("query heads must be a multiple of kv heads");
            if (n.iparams[0] != 0 && n.iparams[0] != 1) return c.fail("mode i[0] must be 0 (softmax) or 1 (exp)");
            mnemo_tensor o = in[1];
            o.ndim = 2;
            return c.output(o);
        }
        case MNEMO_OP_ARGTOPK: {
            if (!c.f32(0, 1, 4, "1..4-D f32 x [..., D]")) return false;
            const int64_t d = in[0].shape[in[0].ndim - 1], k = n.iparams[0];
            if (k < 1 || k > d) return c.fail("k must be in 1..D");
            mnemo_tensor o = in[0];
            o.shape[o.ndim - 1] = k;
            return c.output(o, MNEMO_DTYPE_I32);
        }
        case MNEMO_OP_TAKE_ALONG: {
            if (!c.f32(0, 1, 4, "1..4-D f32 x [..., D]") ||
                !c.input(1, in[1].dtype == MNEMO_DTYPE_I32, in[0].ndim, in[0].ndim, "i32 indices [..., k] of x's rank"))
                return false;
            for (int32_t i = 0; i + 1 < in[0].ndim; ++i)
                if (in[1].shape[i] != in[0].shape[i]) return c.fail("indices and x differ in their leading dimensions");
            return c.output(in[1]);
        }
        case MNEMO_OP_EMBEDDING_BAG: {
            if (!c.weight(0, 2, "2-D f32/f16/bf16 table [R, C]") ||
                !c.input(1, in[1].dtype == MNEMO_DTYPE_I32, 2, 2, "2-D i32 bag indices [N, m]") ||
                !c.f32(2, 2, 3, "f32 bag weights [N, m] or per-core weights [N, m, P]"))
                return false;
            if (in[2].shape[0] != in[1].shape[0] || in[2].shape[1] != in[1].shape[1])
                return c.fail("bag weights " + shape_text(in[2]) + " must start with the shape of the bag indices " +
                              shape_text(in[1]));
            if (in[2].ndim == 3 && (in[2].shape[2] < 1 || in[0].shape[1] % in[2].shape[2] != 0))
                return c.fail("the " + std::to_string(in[2].shape[2]) + " cores of the per-core weights must divide C = " +
                              std::to_string(in[0].shape[1]));
            const int64_t groups = n.iparams[0] == 0 ? 1 : n.iparams[0];
            if (groups < 1) return c.fail("group count " + std::to_string(groups) + " must be >= 1");
            // Indices are i32, so groups x rows must fit one.
            if (groups > INT32_MAX / (in[0].shape[0] > 0 ? in[0].shape[0] : 1))
                return c.fail(std::to_string(groups) + " groups x " + std::to_string(in[0].shape[0]) +
                              " table rows exceed i32 indices");
            mnemo_tensor o = in[1];
            if (__builtin_mul_overflow(groups, in[0].shape[1], &o.shape[1])) return c.fail("G x C overflows");
            return c.output(o);
        }
        case MNEMO_OP_PK_SCORE:
        case MNEMO_OP_PK_TOPK:
        case MNEMO_OP_PK_PAIR_SCORES: return check_product_key_node(n, c);
        case MNEMO_OP_MEM_INDEX:
        case MNEMO_OP_PEER_GATE:
        case MNEMO_OP_HIVE: return check_lookup_node(n, c);
        case MNEMO_OP_MOE_FFN: return check_moe_node(n, c);
        case MNEMO_OP_VQ_DECODE: {
            // What kernels/vq_decode.cpp relies on: tables of exactly 2^bits centroids covering the
            // same Do dimensions, a list number of at most 4 bytes, and a code that fits its words.
            if (!c.input(0, in[0].dtype == MNEMO_DTYPE_I32, 2, 2, "2-D i32 codes [N, W]") ||
                !c.f32(1, 3, 3, "3-D f32 coarse centroids [Mc, 2^bc, Do/Mc]") ||
                !c.f32(2, 3, 3, "3-D f32 PQ centroids [Mp, 2^bp, Do/Mp]"))
                return false;
            const int64_t bc = n.iparams[0], bp = n.iparams[1], mc = in[1].shape[0], mp = in[2].shape[0];
            if (bc < 1 || bc > 16 || bp < 1 || bp > 16) return c.fail("bits per index i[0], i[1] must be in 1..16");
            if (mc < 1 || mc > 32 || mc * bc > 32) return c.fail("Mc x bc coarse bits must be in 1..32");
            if (in[1].shape[1] != (int64_t{1} << bc)) return c.fail("the coarse table must hold 2^bc centroids");
            if (mp < 1 || in[2].shape[1] != (int64_t{1} << bp)) return c.fail("the PQ table must hold 2^bp centroids");
            const int64_t d_out = mc * in[1].shape[2];
            // Mp <= 2^40 keeps Mp * bp from overflowing (a real Mp is at most Do).
            if (mp > (int64_t{1} << 40) || mp * in[2].shape[2] != d_out)
                return c.fail("coarse and PQ tables cover different dimensions");
            const int64_t code_bytes = (mc * bc + 7) / 8 + (mp * bp + 7) / 8;
            if (in[0].shape[1] < (code_bytes + 3) / 4)
                return c.fail("codes of " + std::to_string(in[0].shape[1]) + " words cannot hold " +
                              std::to_string(code_bytes) + " bytes");
            mnemo_tensor o = in[0];
            o.shape[1] = d_out;
            if (n.n_inputs > 3) {
                if (!c.f32(3, 2, 2, "2-D f32 rotation A [Do, Di]")) return false;
                if (in[3].shape[0] != d_out) return c.fail("the rotation must have Do rows");
                o.shape[1] = in[3].shape[1];
            }
            return c.output(o);
        }
        default:
            return c.fail("unknown op");
    }
}

}  // namespace

const char* op_name(int32_t op) {
    return mnemo_op_name(op);
}

bool tensor_bytes(const mnemo_tensor& t, uint64_t* bytes) {
    if (t.dtype < 0 || t.dtype >= MNEMO_DTYPE_COUNT_ || t.ndim < 1 || t.ndim > MNEMO_MAX_DIMS) return false;
    uint64_t n = (t.dtype == MNEMO_DTYPE_F16 || t.dtype == MNEMO_DTYPE_BF16) ? 2 : 4;
    for (int32_t i = 0; i < t.ndim; ++i) {
        if (t.shape[i] < 0) return false;
        if (__builtin_mul_overflow(n, static_cast<uint64_t>(t.shape[i]), &n)) return false;
    }
    *bytes = n;
    return true;
}

bool check_node(const mnemo_node& node, char* message, size_t cap) {
    if (node.op <= MNEMO_OP_NONE || node.op >= MNEMO_OP_COUNT_) {
        std::snprintf(message, cap, "unknown op id %d", node.op);
        return false;
    }
    Checker c(node, message, cap);
    const Arity a = kArity[node.op];
    if (node.n_inputs < a.min || node.n_inputs > a.max)
        return c.fail("takes " + std::to_string(a.min) + ".." + std::to_string(a.max) + " inputs, got " +
                      std::to_string(node.n_inputs));
    uint64_t bytes = 0;
    for (int i = 0; i < node.n_inputs; ++i)
        if (!tensor_bytes(node.inputs[i], &bytes))
            return c.fail("input " + std::to_string(i) + " has an invalid dtype, rank or size");
    if (!tensor_bytes(node.output, &bytes)) return c.fail("output has an invalid dtype, rank or size");
    return check_op(node, c);
}

}  // namespace mnemo_cpu
