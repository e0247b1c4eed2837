// The op table and the shape rule of every op (see the table in mnemo/abi/mnemo_abi.h).
#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <sstream>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"

namespace mnemo {
namespace {

// Profile categories. RoPE and the KV-cache store count as attention (they exist only for it);
// softmax counts with the norms (a row-wise reduction and rescale, like them); every op that
// serves a memory layer (product keys, top-k, gathers, bags, PEER, HIVE) is "memory-layer";
// get_rows (the embedding lookup) is "other".
constexpr const char* kMatmul = "matmul";
constexpr const char* kAttention = "attention";
constexpr const char* kNorm = "norm";
constexpr const char* kElementwise = "elementwise";
constexpr const char* kMemory = "memory-layer";
constexpr const char* kMoe = "moe";
constexpr const char* kOther = "other";
constexpr std::array<const char*, 7> kCategories = {kMatmul, kAttention, kNorm, kElementwise, kMemory, kMoe, kOther};

constexpr std::array<OpInfo, MNEMO_OP_COUNT_> kOps = {{
    {MNEMO_OP_NONE, "none", 0, 0, false, kOther},
    {MNEMO_OP_GET_ROWS, "get_rows", 2, 2, false, kOther},
    {MNEMO_OP_MATMUL, "matmul", 2, 2, false, kMatmul},
    {MNEMO_OP_ADD, "add", 2, 2, false, kElementwise},
    {MNEMO_OP_MUL, "mul", 2, 2, false, kElementwise},
    {MNEMO_OP_SCALE, "scale", 1, 1, false, kElementwise},
    {MNEMO_OP_RMS_NORM, "rms_norm", 1, 2, false, kNorm},
    {MNEMO_OP_LAYER_NORM, "layer_norm", 1, 3, false, kNorm},
    {MNEMO_OP_ROPE, "rope", 3, 3, false, kAttention},
    {MNEMO_OP_SILU, "silu", 1, 1, false, kElementwise},
    {MNEMO_OP_GELU, "gelu", 1, 1, false, kElementwise},
    {MNEMO_OP_SWIGLU, "swiglu", 2, 2, false, kElementwise},
    {MNEMO_OP_SOFTMAX, "softmax", 1, 1, false, kNorm},
    {MNEMO_OP_KV_STORE, "kv_store", 4, 4, true, kAttention},
    {MNEMO_OP_ATTENTION, "attention", 5, 9, false, kAttention},
    {MNEMO_OP_ARGTOPK, "argtopk", 1, 1, false, kMemory},
    {MNEMO_OP_TAKE_ALONG, "take_along", 2, 2, false, kMemory},
    {MNEMO_OP_EMBEDDING_BAG, "embedding_bag", 3, 3, false, kMemory},
    {MNEMO_OP_PK_SCORE, "pk_score", 2, 3, false, kMemory},
    {MNEMO_OP_PK_TOPK, "pk_topk", 1, 8, false, kMemory},
    {MNEMO_OP_PK_PAIR_SCORES, "pk_pair_scores", 2, 7, false, kMemory},
    {MNEMO_OP_MEM_INDEX, "mem_index", 1, 2, false, kMemory},
    {MNEMO_OP_PEER_GATE, "peer_gate", 4, 4, false, kMemory},
    {MNEMO_OP_HIVE, "hive", 4, 4, false, kMemory},
    {MNEMO_OP_MOE_FFN, "moe_ffn", 6, 6, false, kMoe},
    {MNEMO_OP_ATTN_MASS, "attn_mass", 4, 4, false, kAttention},
    {MNEMO_OP_VQ_DECODE, "vq_decode", 3, 4, false, kMemory},
}};

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

class Rule {
public:
    Rule(int32_t op, std::span<const TensorShape> in) : op_(op), in_(in) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw Error(std::string(op_info(op_).name) + ": " + what);
    }
    [[noreturn]] void fail_input(size_t i, const std::string& expected) const {
        std::ostringstream s;
        s << "input " << i << ": expected " << expected << ", got " << in_[i].str();
        fail(s.str());
    }
    const TensorShape& f32(size_t i, int32_t ndim_min, int32_t ndim_max, const char* what) const {
        const TensorShape& t = in_[i];
        if (t.dtype != DType::F32 || t.ndim < ndim_min || t.ndim > ndim_max)
            fail_input(i, dims_text(ndim_min, ndim_max) + " f32 " + what);
        return t;
    }
    const TensorShape& weight(size_t i, int32_t ndim, const char* what) const {
        const TensorShape& t = in_[i];
        if (!is_float_type(t.dtype) || t.ndim != ndim)
            fail_input(i, std::to_string(ndim) + "-D f32/f16/bf16 " + what);
        return t;
    }
    const TensorShape& in_dtype(size_t i, DType dt, const char* what) const {
        const TensorShape& t = in_[i];
        if (t.dtype != dt) fail_input(i, std::string(dtype_name(dt)) + " " + what);
        return t;
    }
    const TensorShape& i32_vec(size_t i, int64_t n, const char* what) const {
        const TensorShape& t = in_[i];
        if (t.dtype != DType::I32 || t.ndim != 1 || (n >= 0 && t.shape[0] != n))
            fail_input(i, "i32[" + (n >= 0 ? std::to_string(n) : std::string("N")) + "] " + what);
        return t;
    }
    static std::string dims_text(int32_t lo, int32_t hi) {
        return lo == hi ? std::to_string(lo) + "-D" : std::to_string(lo) + "..." + std::to_string(hi) + "-D";
    }

private:
    int32_t op_;
    std::span<const TensorShape> in_;
};

// b must equal a trailing suffix of a's shape (bias / per-channel scale broadcasting).
bool suffix_broadcastable(const TensorShape& a, const TensorShape& b) {
    if (b.ndim > a.ndim) return false;
    for (int32_t i = 0; i < b.ndim; ++i)
        if (b.shape[b.ndim - 1 - i] != a.shape[a.ndim - 1 - i]) return false;
    return true;
}

bool same_shape(const TensorShape& a, const TensorShape& b) {
    if (a.ndim != b.ndim) return false;
    for (int32_t i = 0; i < a.ndim; ++i)
        if (a.shape[i] != b.shape[i]) return false;
    return true;
}

}  // namespace

std::string TensorShape::str() const {
    std::ostringstream s;
    s << dtype_name(dtype) << "[";
    // A rank outside 1..4 is what error messages report, so never index past the array.
    for (int32_t i = 0; i < ndim && i < MNEMO_MAX_DIMS; ++i) s << (i ? ", " : "") << shape[i];
    if (ndim > MNEMO_MAX_DIMS) s << ", ... (" << ndim << " dims)";
    s << "]";
    return s.str();
}

TensorShape shape_of(const mnemo_tensor& t) {
    TensorShape s;
    s.dtype = static_cast<DType>(t.dtype);
    s.ndim = t.ndim;
    for (int32_t i = 0; i < t.ndim && i < MNEMO_MAX_DIMS; ++i) s.shape[i] = t.shape[i];
    return s;
}

int32_t op_count() { return MNEMO_OP_COUNT_; }

std::span<const char* const> op_categories() { return kCategories; }

const OpInfo& op_info(int32_t op) {
    if (op <= MNEMO_OP_NONE || op >= MNEMO_OP_COUNT_) throw Error("unknown op id " + std::to_string(op));
    return kOps[static_cast<size_t>(op)];
}

std::optional<int32_t> op_from_name(std::string_view name) {
    for (const OpInfo& o : kOps)
        if (o.op != MNEMO_OP_NONE && name == o.name) return o.op;
    return std::nullopt;
}

TensorShape infer_output(int32_t op, std::span<const TensorShape> in, std::span<const int64_t> ip,
                         std::span<const float> fp) {
    const OpInfo& info = op_info(op);
    Rule r(op, in);
    if (static_cast<int32_t>(in.size()) < info.min_inputs || static_cast<int32_t>(in.size()) > info.max_inputs) {
        std::ostringstream s;
        s << "takes " << info.min_inputs << (info.min_inputs == info.max_inputs ? "" : "..")
          << (info.min_inputs == info.max_inputs ? "" : std::to_string(info.max_inputs)) << " inputs, got "
          << in.size();
        r.fail(s.str());
    }
    for (size_t i = 0; i < in.size(); ++i) {
        if (in[i].ndim < 1 || in[i].ndim > MNEMO_MAX_DIMS) r.fail_input(i, "1..4 dimensions");
        for (int32_t d = 0; d < in[i].ndim; ++d)
            if (in[i].shape[d] < 0) r.fail_input(i, "non-negative dimensions");
    }
    auto need_f = [&](size_t n) {
        if (fp.size() < n) r.fail("needs " + std::to_string(n) + " float parameter(s)");
    };
    auto need_i = [&](size_t n) {
        if (ip.size() < n) r.fail("needs " + std::to_string(n) + " integer parameter(s)");
    };

    TensorShape out;
    switch (op) {
        case MNEMO_OP_GET_ROWS: {
            const TensorShape& table = r.weight(0, 2, "table [R, C]");
            const TensorShape& idx = r.i32_vec(1, -1, "row indices");
            out.ndim = 2;
            out.shape[0] = idx.shape[0];
            out.shape[1] = table.shape[1];
            return out;
        }
        case MNEMO_OP_MATMUL: {
            const TensorShape& x = r.f32(0, 1, 4, "activations [..., K]");
            const TensorShape& w = r.weight(1, 2, "weight [M, K]");
            if (w.shape[1] != x.shape[x.ndim - 1])
                r.fail("inner dimensions differ: x " + x.str() + " has K=" + std::to_string(x.shape[x.ndim - 1]) +
                       ", W " + w.str() + " has K=" + std::to_string(w.shape[1]));
            out = x;
            out.shape[x.ndim - 1] = w.shape[0];
            return out;
        }
        case MNEMO_OP_ADD:
        case MNEMO_OP_MUL: {
            const TensorShape& a = r.f32(0, 1, 4, "a");
            const TensorShape& b = r.f32(1, 1, 4, "b");
            if (!suffix_broadcastable(a, b))
                r.fail("b " + b.str() + " must equal a trailing part of a's shape " + a.str());
            return a;
        }
        case MNEMO_OP_SCALE:
            need_f(1);
            return r.f32(0, 1, 4, "x");
        case MNEMO_OP_SILU:
            return r.f32(0, 1, 4, "x");
        case MNEMO_OP_GELU:
            if (!ip.empty() && ip[0] != 0 && ip[0] != 1)
                r.fail("form i[0] must be 0 (tanh approximation) or 1 (exact erf), got " + std::to_string(ip[0]));
            return r.f32(0, 1, 4, "x");
        case MNEMO_OP_SOFTMAX:
            return r.f32(0, 1, 4, "x");
        case MNEMO_OP_SWIGLU: {
            const TensorShape& g = r.f32(0, 1, 4, "gate");
            const TensorShape& u = r.f32(1, 1, 4, "up");
            if (!same_shape(g, u)) r.fail("gate " + g.str() + " and up " + u.str() + " differ");
            return g;
        }
        case MNEMO_OP_RMS_NORM:
        case MNEMO_OP_LAYER_NORM: {
            need_f(1);
            const TensorShape& x = r.f32(0, 1, 4, "x [..., D]");
            const int64_t d = x.shape[x.ndim - 1];
            for (size_t i = 1; i < in.size(); ++i) {
                const TensorShape& w = r.weight(i, 1, i == 1 ? "weight [D]" : "bias [D]");
                if (w.shape[0] != d) r.fail_input(i, "length " + std::to_string(d));
            }
            if (!(fp[0] >= 0.0f)) r.fail("eps must be >= 0");
            return x;
        }
        case MNEMO_OP_ROPE: {
            need_i(2);
            const TensorShape& x = r.f32(0, 3, 3, "x [N, H, D]");
            r.i32_vec(1, x.shape[0], "positions");
            const TensorShape& f = r.f32(2, 1, 1, "inverse frequencies [R/2]");
            const int64_t rot = ip[1];
            if (ip[0] != 0 && ip[0] != 1) r.fail("mode must be 0 (rotate half) or 1 (interleaved)");
            if (rot <= 0 || rot % 2 != 0 || rot > x.shape[2])
                r.fail("rotary dims " + std::to_string(rot) + " must be even and in 2.." + std::to_string(x.shape[2]));
            if (f.shape[0] != rot / 2)
                r.fail("inverse frequencies hold " + std::to_string(f.shape[0]) + " values, rotary dims " +
                       std::to_string(rot) + " need " + std::to_string(rot / 2));
            // pos + offset must stay an i32 for every position an i32 can hold
            if (ip.size() > 2 && (ip[2] < -(int64_t{1} << 30) || ip[2] > (int64_t{1} << 30)))
                r.fail("position offset " + std::to_string(ip[2]) + " is outside -2^30..2^30");
            return x;
        }
        case MNEMO_OP_KV_STORE: {
            const TensorShape& cache = r.f32(0, 4, 4, "cache [S, H, C, D]");
            const TensorShape& src = r.f32(1, 3, 3, "src [N, H, D]");
            if (src.shape[1] != cache.shape[1] || src.shape[2] != cache.shape[3])
                r.fail("src " + src.str() + " does not fit cache " + cache.str());
            r.i32_vec(2, src.shape[0], "sequence ids");
            r.i32_vec(3, src.shape[0], "positions");
            return cache;
        }
        case MNEMO_OP_ATTENTION: {
            need_f(1);
            const TensorShape& q = r.f32(0, 3, 3, "q [N, Hq, D]");
            const TensorShape& k = r.f32(1, 4, 4, "k cache [S, Hkv, C, D]");
            const TensorShape& v = r.f32(2, 4, 4, "v cache [S, Hkv, C, Dv]");
            r.i32_vec(3, q.shape[0], "sequence ids");
            r.i32_vec(4, q.shape[0], "positions");
            if (k.shape[3] != q.shape[2]) r.fail("q head dim " + std::to_string(q.shape[2]) + " != k head dim " + std::to_string(k.shape[3]));
            if (k.shape[0] != v.shape[0] || k.shape[1] != v.shape[1] || k.shape[2] != v.shape[2])
                r.fail("k cache " + k.str() + " and v cache " + v.str() + " disagree");
            if (k.shape[1] == 0 || q.shape[1] % k.shape[1] != 0)
                r.fail("query heads " + std::to_string(q.shape[1]) + " are not a multiple of kv heads " +
                       std::to_string(k.shape[1]));
            if (in.size() == 6 || in.size() == 7) r.fail("a prefix needs pk, pv and plen (inputs 5..7)");
            if (in.size() >= 8) {
                const TensorShape& pk = r.f32(5, 4, 4, "prefix keys [B, Hkv, M, D]");
                const TensorShape& pv = r.f32(6, 4, 4, "prefix values [B, Hkv, M, Dv]");
                if (pk.shape[1] != k.shape[1] || pk.shape[3] != k.shape[3])
                    r.fail("prefix keys " + pk.str() + " do not match the k cache " + k.str() + " (heads, head dim)");
                if (pv.shape[0] != pk.shape[0] || pv.shape[1] != pk.shape[1] || pv.shape[2] != pk.shape[2] ||
                    pv.shape[3] != v.shape[3])
                    r.fail("prefix values " + pv.str() + " do not match prefix keys " + pk.str() + " and v cache " + v.str());
                r.i32_vec(7, pk.shape[0], "prefix lengths [B]");
                if (in.size() == 9) r.i32_vec(8, q.shape[0], "prefix block of each query");
                else if (pk.shape[0] != 1) r.fail("without a block per query (input 8) the prefix must have 1 block, got " + pk.str());
            }
            out.ndim = 3;
            out.shape[0] = q.shape[0];
            out.shape[1] = q.shape[1];
            out.shape[2] = v.shape[3];
            return out;
        }
        case MNEMO_OP_ATTN_MASS: {
            need_i(2);
            need_f(1);
            const TensorShape& q = r.f32(0, 3, 3, "q [N, Hq, D]");
            const TensorShape& k = r.f32(1, 3, 3, "k [N, Hkv, D]");
            r.i32_vec(2, q.shape[0], "sequence ids");
            r.i32_vec(3, q.shape[0], "positions");
            if (k.shape[0] != q.shape[0] || k.shape[2] != q.shape[2])
                r.fail("q " + q.str() + " and k " + k.str() + " need the same rows and head dim");
            if (k.shape[1] == 0 || q.shape[1] % k.shape[1] != 0)
                r.fail("query heads " + std::to_string(q.shape[1]) + " are not a multiple of kv heads " +
                       std::to_string(k.shape[1]));
            if (ip[0] != 0 && ip[0] != 1) r.fail("mode i[0] must be 0 (softmax) or 1 (exp), got " + std::to_string(ip[0]));
            out.ndim = 2;
            out.shape[0] = q.shape[0];
            out.shape[1] = k.shape[1];
            return out;
        }
        case MNEMO_OP_VQ_DECODE: {
            need_i(2);
            const TensorShape& codes = r.in_dtype(0, DType::I32, "codes [N, W]");
            if (codes.ndim != 2) r.fail_input(0, "2-D i32 codes [N, W]");
            const TensorShape& coarse = r.f32(1, 3, 3, "coarse centroids [Mc, 2^bc, Do/Mc]");
            const TensorShape& pq = r.f32(2, 3, 3, "PQ centroids [Mp, 2^bp, Do/Mp]");
            const int64_t bc = ip[0], bp = ip[1];
            if (bc < 1 || bc > 16 || bp < 1 || bp > 16) r.fail("code bits must be in 1..16 (coarse " + std::to_string(bc) + ", pq " + std::to_string(bp) + ")");
            const int64_t mc = coarse.shape[0], mp = pq.shape[0];
            if (mc < 1 || mc * bc > 32) r.fail("coarse codes of " + std::to_string(mc) + " x " + std::to_string(bc) + " bits do not fit 32 bits");
            if (coarse.shape[1] != (int64_t{1} << bc)) r.fail("coarse table " + coarse.str() + " must hold 2^" + std::to_string(bc) + " centroids");
            if (mp < 1 || pq.shape[1] != (int64_t{1} << bp)) r.fail("PQ table " + pq.str() + " must hold 2^" + std::to_string(bp) + " centroids per sub-quantizer");
            const int64_t d_out = coarse.shape[0] * coarse.shape[2];
            if (pq.shape[0] * pq.shape[2] != d_out)
                r.fail("coarse table " + coarse.str() + " and PQ table " + pq.str() + " cover different dimensions");
            const int64_t bytes = (mc * bc + 7) / 8 + (mp * bp + 7) / 8;
            if (codes.shape[1] * 4 < bytes)
                r.fail("codes " + codes.str() + " hold " + std::to_string(codes.shape[1] * 4) + " bytes per vector, a code needs " + std::to_string(bytes));
            out.ndim = 2;
            out.shape[0] = codes.shape[0];
            out.shape[1] = d_out;
            if (in.size() == 4) {
                const TensorShape& a = r.f32(3, 2, 2, "rotation A [Do, Di]");
                if (a.shape[0] != d_out) r.fail("rotation " + a.str() + " must have Do = " + std::to_string(d_out) + " rows");
                out.shape[1] = a.shape[1];
            }
            return out;
        }
        case MNEMO_OP_ARGTOPK: {
            need_i(1);
            const TensorShape& x = r.f32(0, 1, 4, "x [..., D]");
            const int64_t d = x.shape[x.ndim - 1], k = ip[0];
            if (k < 1 || k > d)
                r.fail("k = " + std::to_string(k) + " must be in 1..D, and x " + x.str() + " has D = " +
                       std::to_string(d));
            out = x;
            out.dtype = DType::I32;
            out.shape[x.ndim - 1] = k;
            return out;
        }
        case MNEMO_OP_TAKE_ALONG: {
            const TensorShape& x = r.f32(0, 1, 4, "x [..., D]");
            const TensorShape& idx = r.in_dtype(1, DType::I32, "indices [..., k]");
            bool same_lead = idx.ndim == x.ndim;
            for (int32_t i = 0; same_lead && i + 1 < x.ndim; ++i) same_lead = idx.shape[i] == x.shape[i];
            if (!same_lead)
                r.fail("indices " + idx.str() + " must have the leading dimensions of x " + x.str() +
                       " (all but the last)");
            out = idx;
            out.dtype = DType::F32;
            return out;
        }
        case MNEMO_OP_EMBEDDING_BAG: {
            const TensorShape& table = r.weight(0, 2, "table [R, C]");
            const TensorShape& idx = r.in_dtype(1, DType::I32, "bag indices [N, m]");
            if (idx.ndim != 2) r.fail_input(1, "2-D i32 bag indices [N, m]");
            const TensorShape& w = r.f32(2, 2, 3, "bag weights [N, m] or per-core [N, m, P]");
            if (w.shape[0] != idx.shape[0] || w.shape[1] != idx.shape[1])
                r.fail("bag weights " + w.str() + " must start with the shape of the bag indices " + idx.str());
            const int64_t cols = table.shape[1];
            if (w.ndim == 3 && (w.shape[2] < 1 || cols % w.shape[2] != 0))
                r.fail("per-core weights " + w.str() + ": the " + std::to_string(w.shape[2]) +
                       " cores must divide the table width C = " + std::to_string(cols));
            const int64_t groups = ip.empty() || ip[0] == 0 ? 1 : ip[0];
            if (groups < 1) r.fail("group count " + std::to_string(groups) + " must be >= 1");
            if (groups > INT32_MAX / std::max<int64_t>(1, table.shape[0]))
                r.fail(std::to_string(groups) + " groups x " + std::to_string(table.shape[0]) +
                       " table rows exceed i32 indices");
            out.ndim = 2;
            out.shape[0] = idx.shape[0];
            out.shape[1] = groups * cols;
            return out;
        }
        case MNEMO_OP_PK_SCORE: {
            need_i(2);
            const TensorShape& q = r.f32(0, 4, 4, "queries [N, Q, 2, K]");
            const TensorShape& keys = r.weight(1, 4, "sub-keys [2H, Nk, K, Rk]");
            const int64_t heads = ip[0], share = ip[1];
            if (heads < 1 || share < 1)
                r.fail("heads " + std::to_string(heads) + " and heads per query " + std::to_string(share) + " must be >= 1");
            if (q.shape[2] != 2) r.fail_input(0, "queries [N, Q, 2, K] (2 = row and column halves)");
            if (keys.shape[0] != 2 * heads)
                r.fail("sub-keys " + keys.str() + " must hold 2H = " + std::to_string(2 * heads) + " banks for H = " +
                       std::to_string(heads) + " heads");
            if (keys.shape[2] != q.shape[3])
                r.fail("sub-key dim " + std::to_string(keys.shape[2]) + " != query half dim " + std::to_string(q.shape[3]));
            if (q.shape[1] * share < heads)
                r.fail(std::to_string(q.shape[1]) + " queries shared by " + std::to_string(share) +
                       " heads each cannot serve " + std::to_string(heads) + " heads");
            if (in.size() == 3) {
                need_f(1);
                const TensorShape& g = r.weight(2, 1, "key-norm gain [K]");
                if (g.shape[0] != keys.shape[2]) r.fail_input(2, "length " + std::to_string(keys.shape[2]));
                if (!(fp[0] >= 0.0f)) r.fail("eps must be >= 0");
            }
            out.ndim = 4;
            out.shape[0] = q.shape[0];
            out.shape[1] = 2 * heads;
            out.shape[2] = keys.shape[1];
            out.shape[3] = keys.shape[3];
            return out;
        }
        case MNEMO_OP_PK_TOPK:
        case MNEMO_OP_PK_PAIR_SCORES: {
            const TensorShape& sc = r.f32(0, 4, 4, "sub-key scores [N, 2H, Nk, Rk]");
            if (sc.shape[1] % 2 != 0) r.fail_input(0, "an even second dimension (row and column per head)");
            const int64_t n = sc.shape[0], heads = sc.shape[1] / 2, nk = sc.shape[2], rank = sc.shape[3];
            // PK_TOPK: S [, u, v, core...]; PK_PAIR_SCORES: S, idx [, core...]
            const size_t first_core = op == MNEMO_OP_PK_TOPK ? 3 : 2;
            if (op == MNEMO_OP_PK_TOPK && (in.size() == 2 || in.size() == 3))
                r.fail("Tucker scoring takes S, u, v and 1..5 cores; additive scoring takes S alone");
            if (op == MNEMO_OP_PK_TOPK && in.size() > 1)
                for (size_t i = 1; i < 3; ++i) {
                    const TensorShape& uv = r.weight(i, 2, i == 1 ? "row rank-1 vector u [H, Rk]" : "column rank-1 vector v [H, Rk]");
                    if (uv.shape[0] != heads || uv.shape[1] != rank)
                        r.fail_input(i, "[" + std::to_string(heads) + ", " + std::to_string(rank) + "]");
                }
            const int64_t cores = in.size() > first_core ? static_cast<int64_t>(in.size() - first_core) : 0;
            for (size_t i = first_core; i < in.size(); ++i) {
                const TensorShape& core = r.weight(i, 3, "Tucker core [H, Rk, Rk]");
                if (core.shape[0] != heads || core.shape[1] != rank || core.shape[2] != rank)
                    r.fail_input(i, "core [" + std::to_string(heads) + ", " + std::to_string(rank) + ", " +
                                        std::to_string(rank) + "]");
            }
            if (cores == 0 && rank != 1)
                r.fail("additive scoring needs rank-1 scores; rank " + std::to_string(rank) + " needs Tucker cores");
            if (op == MNEMO_OP_PK_TOPK) {
                need_i(2);
                const int64_t m = ip[0], k = ip[1];
                // Nk first (by division: Nk*Nk could overflow), so that m*m below cannot.
                if (nk > 0 && nk > INT32_MAX / nk)
                    r.fail("Nk*Nk virtual keys (Nk = " + std::to_string(nk) + ") exceed i32 indices");
                if (m < 1 || m > nk)
                    r.fail("candidates per side m = " + std::to_string(m) + " must be in 1.." + std::to_string(nk) +
                           " (sub-keys per side)");
                if (k < 1 || k > m * m)
                    r.fail("k = " + std::to_string(k) + " must be in 1..m*m = " + std::to_string(m * m));
                out.ndim = 3;
                out.dtype = DType::I32;
                out.shape[0] = n;
                out.shape[1] = heads;
                out.shape[2] = k;
                return out;
            }
            const TensorShape& idx = r.in_dtype(1, DType::I32, "pair indices [N, H, k]");
            if (idx.ndim != 3 || idx.shape[0] != n || idx.shape[1] != heads)
                r.fail_input(1, "i32 pair indices [" + std::to_string(n) + ", " + std::to_string(heads) + ", k]");
            out.ndim = 4;
            out.shape[0] = n;
            out.shape[1] = heads;
            out.shape[2] = idx.shape[2];
            out.shape[3] = cores == 0 ? 1 : cores;
            return out;
        }
        case MNEMO_OP_MEM_INDEX: {
            need_i(5);
            const TensorShape& v = r.in_dtype(0, DType::I32, "virtual indices");
            if (in.size() == 2) r.i32_vec(1, -1, "shuffle permutation [V]");
            const int64_t value_num = ip[0], offset = ip[1], rows = ip[2], groups = ip[3], with_group = ip[4];
            if (value_num < 1 || rows < 1 || groups < 1)
                r.fail("value_num, table rows and groups must be >= 1 (got " + std::to_string(value_num) + ", " +
                       std::to_string(rows) + ", " + std::to_string(groups) + ")");
            if (offset < 0 || offset >= rows)
                r.fail("offset " + std::to_string(offset) + " is outside the table's 0.." + std::to_string(rows - 1));
            if (with_group != 0 && with_group != 1) r.fail("with_group must be 0 or 1");
            if (rows > INT32_MAX) r.fail("table rows " + std::to_string(rows) + " exceed i32 indices");
            if (with_group && groups > INT32_MAX / rows)
                r.fail(std::to_string(groups) + " groups x " + std::to_string(rows) + " rows exceed i32 indices");
            return v;
        }
        case MNEMO_OP_PEER_GATE: {
            const TensorShape& table = r.weight(0, 2, "pre-value table [R, P]");
            const TensorShape& idx = r.in_dtype(1, DType::I32, "indices [N, m]");
            if (idx.ndim != 2) r.fail_input(1, "2-D i32 indices [N, m]");
            const TensorShape& x = r.f32(2, 2, 2, "pre-value query [N, P]");
            const TensorShape& sc = r.f32(3, 2, 3, "scores [N, m] or [N, m, C]");
            if (x.shape[0] != idx.shape[0] || x.shape[1] != table.shape[1])
                r.fail("query " + x.str() + " must be [" + std::to_string(idx.shape[0]) + ", " +
                       std::to_string(table.shape[1]) + "]");
            if (sc.shape[0] != idx.shape[0] || sc.shape[1] != idx.shape[1])
                r.fail("scores " + sc.str() + " must start with the shape of the indices " + idx.str());
            if (!ip.empty() && (ip[0] < 0 || ip[0] > 2)) r.fail("activation must be 0 (none), 1 (GELU erf) or 2 (GELU tanh)");
            return sc;
        }
        case MNEMO_OP_HIVE: {
            const TensorShape& bank = r.weight(0, 2, "latent bank [R, r]");
            const TensorShape& idx = r.in_dtype(1, DType::I32, "indices [N, H, m]");
            if (idx.ndim != 3) r.fail_input(1, "3-D i32 indices [N, H, m]");
            const TensorShape& w = r.f32(2, 3, 3, "weights [N, H, m]");
            if (!same_shape(idx, w)) r.fail("weights " + w.str() + " must have the shape of the indices " + idx.str());
            const TensorShape& proj = r.weight(3, 3, "head projections [H, r, Dh]");
            if (proj.shape[0] != idx.shape[1] || proj.shape[1] != bank.shape[1])
                r.fail("head projections " + proj.str() + " must be [" + std::to_string(idx.shape[1]) + ", " +
                       std::to_string(bank.shape[1]) + ", Dh]");
            out.ndim = 3;
            out.shape[0] = idx.shape[0];
            out.shape[1] = idx.shape[1];
            out.shape[2] = proj.shape[2];
            return out;
        }
        case MNEMO_OP_MOE_FFN: {
            const TensorShape& x = r.f32(0, 2, 2, "activations [N, D]");
            const TensorShape& idx = r.in_dtype(1, DType::I32, "expert ids [N, k]");
            const TensorShape& w = r.f32(2, 2, 2, "expert weights [N, k]");
            if (idx.ndim != 2 || idx.shape[0] != x.shape[0]) r.fail_input(1, "i32 expert ids [" + std::to_string(x.shape[0]) + ", k]");
            if (!same_shape(idx, w)) r.fail("expert weights " + w.str() + " must have the shape of the expert ids " + idx.str());
            const TensorShape& gate = r.weight(3, 3, "gate [E, F, D]");
            const TensorShape& up = r.weight(4, 3, "up [E, F, D]");
            const TensorShape& down = r.weight(5, 3, "down [E, D, F]");
            const int64_t e = gate.shape[0], f = gate.shape[1], d = x.shape[1];
            if (gate.shape[2] != d) r.fail_input(3, "gate [E, F, " + std::to_string(d) + "]");
            if (up.shape[0] != e || up.shape[1] != f || up.shape[2] != d) r.fail_input(4, "up with the shape of gate " + gate.str());
            if (down.shape[0] != e || down.shape[1] != d || down.shape[2] != f)
                r.fail_input(5, "down [" + std::to_string(e) + ", " + std::to_string(d) + ", " + std::to_string(f) + "]");
            return x;
        }
        default:
            r.fail("has no shape rule");
    }
}

namespace {
double numel_of(const mnemo_tensor& t) {
    double v = 1;
    for (int32_t i = 0; i < t.ndim; ++i) v *= static_cast<double>(t.shape[i]);
    return v;
}
}  // namespace

int gathering_input(int32_t op, size_t k) {
    switch (op) {
        case MNEMO_OP_GET_ROWS:
        case MNEMO_OP_EMBEDDING_BAG:
        case MNEMO_OP_PEER_GATE:
        case MNEMO_OP_HIVE: return k == 0 ? 1 : -1;
        case MNEMO_OP_MOE_FFN: return k >= 3 ? 1 : -1;  // the k chosen experts of each token
        default: return -1;
    }
}

double node_flops(const mnemo_node& n) {
    const TensorShape out = shape_of(n.output);
    switch (n.op) {
        case MNEMO_OP_MATMUL:
            return 2.0 * static_cast<double>(out.numel()) * static_cast<double>(n.inputs[1].shape[1]);
        case MNEMO_OP_ATTENTION: {
            // Causal: on average about half the context; count the keys actually read is data
            // dependent, so report the upper bound over the cache length.
            // A prefix (inputs 5..) adds its M slots to every query's keys.
            const double heads = static_cast<double>(n.inputs[0].shape[0] * n.inputs[0].shape[1]);
            const double keys = static_cast<double>(n.inputs[1].shape[2]) +
                                (n.n_inputs >= 8 ? static_cast<double>(n.inputs[5].shape[2]) : 0.0);
            return heads * 2.0 * keys * static_cast<double>(n.inputs[0].shape[2] + n.inputs[2].shape[3]);
        }
        case MNEMO_OP_ATTN_MASS: {
            // A D-long score per (query token, head, key token) of one sequence; which tokens
            // share a sequence is data, so report the bound where all N do.
            const double rows = static_cast<double>(n.inputs[0].shape[0]);
            return rows * rows * static_cast<double>(n.inputs[0].shape[1]) * 2.0 * static_cast<double>(n.inputs[0].shape[2]);
        }
        case MNEMO_OP_EMBEDDING_BAG:  // a multiply-add per bag entry and column
            return 2.0 * static_cast<double>(n.inputs[1].shape[0]) * static_cast<double>(n.inputs[1].shape[1]) *
                   static_cast<double>(n.inputs[0].shape[1]);
        case MNEMO_OP_PK_SCORE:  // every sub-key of every rank against its query
            return 2.0 * static_cast<double>(out.numel()) * static_cast<double>(n.inputs[1].shape[2]);
        case MNEMO_OP_PK_TOPK: {  // m*m candidate pairs per (token, head), each an Rk x Rk form per core
            const double rank = static_cast<double>(n.inputs[0].shape[3]);
            const double cores = n.n_inputs > 3 ? n.n_inputs - 3 : 0;
            const double m = static_cast<double>(n.iparams[0]);
            const double pairs = static_cast<double>(n.inputs[0].shape[0] * n.inputs[0].shape[1] / 2) * m * m;
            return numel_of(n.inputs[0]) + pairs * (cores > 0 ? 2.0 * cores * rank * (rank + 1) : 1.0);
        }
        case MNEMO_OP_PK_PAIR_SCORES: {
            const double rank = static_cast<double>(n.inputs[0].shape[3]);
            return static_cast<double>(out.numel()) * 2.0 * rank * (rank + 1);
        }
        case MNEMO_OP_PEER_GATE:  // a dot product per entry
            return 2.0 * numel_of(n.inputs[1]) * static_cast<double>(n.inputs[0].shape[1]);
        case MNEMO_OP_HIVE: {  // the latent bag, then one r x Dh projection per (token, head)
            const double r = static_cast<double>(n.inputs[0].shape[1]);
            return 2.0 * numel_of(n.inputs[1]) * r +
                   2.0 * static_cast<double>(out.numel()) * r;
        }
        case MNEMO_OP_MOE_FFN:  // three matrix-vector products per chosen expert
            return 6.0 * numel_of(n.inputs[1]) * static_cast<double>(n.inputs[3].shape[1]) *
                   static_cast<double>(n.inputs[3].shape[2]);
        case MNEMO_OP_VQ_DECODE: {  // an addition per rotated element, then A^T y: Do multiply-adds per output
            const double d_out = static_cast<double>(n.inputs[1].shape[0]) * static_cast<double>(n.inputs[1].shape[2]);
            const double rotated = static_cast<double>(n.inputs[0].shape[0]) * d_out;
            return n.n_inputs > 3 ? rotated + 2.0 * static_cast<double>(out.numel()) * d_out : rotated;
        }
        default:
            return static_cast<double>(out.numel());
    }
}

}  // namespace mnemo
