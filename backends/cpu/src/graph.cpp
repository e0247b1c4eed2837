#include "graph.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "kernels/kernel_api.hpp"
#include "node_check.hpp"

namespace mnemo_cpu {
namespace {

struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
};

struct CpuGraph {
    std::vector<PreparedNode> nodes;
    size_t scratch_per_thread = 0;  // floats, the largest need of any node
    std::unique_ptr<float, FreeDeleter> scratch;
    int scratch_threads = 0;  // threads the scratch was sized for
    std::atomic<int64_t> next_task{0};
};

KernelFn select_kernel(PreparedNode& p, Isa isa) {
    switch (p.node.op) {
        case MNEMO_OP_MATMUL: return select_matmul(p, isa);
        case MNEMO_OP_ADD:
        case MNEMO_OP_MUL:
        case MNEMO_OP_SCALE:
        case MNEMO_OP_SILU:
        case MNEMO_OP_GELU:
        case MNEMO_OP_SWIGLU: return select_elementwise(p, isa);
        case MNEMO_OP_RMS_NORM:
        case MNEMO_OP_LAYER_NORM: return select_norm(p, isa);
        case MNEMO_OP_SOFTMAX: return select_softmax(p, isa);
        case MNEMO_OP_ROPE: return select_rope(p, isa);
        case MNEMO_OP_GET_ROWS:
        case MNEMO_OP_KV_STORE: return select_rows(p, isa);
        case MNEMO_OP_ATTENTION: return select_attention(p, isa);
        case MNEMO_OP_ATTN_MASS: return select_attn_mass(p, isa);
        case MNEMO_OP_ARGTOPK:
        case MNEMO_OP_TAKE_ALONG:
        case MNEMO_OP_EMBEDDING_BAG: return select_memory_ops(p, isa);
        case MNEMO_OP_PK_SCORE:
        case MNEMO_OP_PK_TOPK:
        case MNEMO_OP_PK_PAIR_SCORES: return select_product_keys(p, isa);
        case MNEMO_OP_MEM_INDEX:
        case MNEMO_OP_PEER_GATE:
        case MNEMO_OP_HIVE: return select_lookup(p, isa);
        case MNEMO_OP_MOE_FFN: return select_moe(p, isa);
        case MNEMO_OP_VQ_DECODE: return select_vq_decode(p, isa);
        default: return nullptr;
    }
}

// Below roughly this much work (multiply-adds, or elements touched) a node runs on the calling
// thread alone: handing it out costs more than it saves (a wake-up and a cache-line ping-pong
// are a few microseconds; 32k simple operations take about as long).
constexpr double kParallelWork = 32768.0;

double node_work(const mnemo_node& n) {
    switch (n.op) {
        case MNEMO_OP_MATMUL: return static_cast<double>(numel(n.output)) * static_cast<double>(n.inputs[1].shape[1]);
        case MNEMO_OP_ATTENTION:  // every query row reads up to the whole cache of its sequence
            return static_cast<double>(numel(n.inputs[0])) * static_cast<double>(n.inputs[1].shape[2]);
        case MNEMO_OP_KV_STORE: return static_cast<double>(numel(n.inputs[1]));
        case MNEMO_OP_ATTN_MASS:  // every query row against the keys of its sequence (bound: all N)
            return static_cast<double>(numel(n.inputs[0])) * static_cast<double>(n.inputs[0].shape[0]);
        case MNEMO_OP_ARGTOPK: return static_cast<double>(numel(n.inputs[0]));  // every score is ranked
        case MNEMO_OP_TAKE_ALONG: return static_cast<double>(numel(n.output));
        case MNEMO_OP_EMBEDDING_BAG:  // a multiply-add per bag entry and column
            return static_cast<double>(numel(n.inputs[1])) * static_cast<double>(n.inputs[0].shape[1]);
        case MNEMO_OP_PK_SCORE:  // a K-long dot product per output element
            return static_cast<double>(numel(n.output)) * static_cast<double>(n.inputs[1].shape[2]);
        case MNEMO_OP_PK_TOPK: {  // every score is ranked, then m*m pairs per (token, head)
            const double m = static_cast<double>(n.iparams[0]);
            return static_cast<double>(numel(n.inputs[0])) +
                   static_cast<double>(numel(n.output)) / static_cast<double>(n.iparams[1]) * m * m;
        }
        case MNEMO_OP_PK_PAIR_SCORES: {  // an Rk x Rk bilinear form per output element
            const double rank = static_cast<double>(n.inputs[0].shape[3]);
            return static_cast<double>(numel(n.output)) * rank * rank;
        }
        case MNEMO_OP_MEM_INDEX: return static_cast<double>(numel(n.output));  // a few integer operations per index
        case MNEMO_OP_PEER_GATE:  // a P-long dot product per entry
            return static_cast<double>(numel(n.inputs[1])) * static_cast<double>(n.inputs[0].shape[1]);
        case MNEMO_OP_HIVE:  // the latent bag (m x r per head), then an r x Dh projection per head
            return static_cast<double>(numel(n.inputs[1])) * static_cast<double>(n.inputs[0].shape[1]) +
                   static_cast<double>(numel(n.output)) * static_cast<double>(n.inputs[0].shape[1]);
        case MNEMO_OP_MOE_FFN:  // three F x D matrix-vector products per (token, choice)
            return 3.0 * static_cast<double>(numel(n.inputs[1])) * static_cast<double>(n.inputs[3].shape[1]) *
                   static_cast<double>(n.inputs[3].shape[2]);
        case MNEMO_OP_VQ_DECODE:  // Do rotated elements per row, then Do multiply-adds per output element with A
            return static_cast<double>(n.inputs[0].shape[0]) * static_cast<double>(n.inputs[1].shape[0] * n.inputs[1].shape[2]) *
                   (n.n_inputs > 3 ? 1.0 + static_cast<double>(n.inputs[3].shape[1]) : 1.0);
        default: return static_cast<double>(numel(n.output));
    }
}

// Resolves a tensor to its address after checking that it lies inside a buffer of this context.
mnemo_status resolve(const CpuContext& ctx, const mnemo_tensor& t, int32_t index, const char* role, int32_t slot,
                     bool written, void** out, mnemo_error* err) {
    const BufferRecord* rec = ctx.buffers.find(t.buffer);
    if (!rec)
        return set_error(err, MNEMO_ERR_INVALID, "cpu graph_prepare: node %d: %s %d is not in a buffer of this context",
                         index, role, slot);
    uint64_t bytes = 0;
    tensor_bytes(t, &bytes);
    if (!range_fits(t.offset, bytes, rec->size))
        return set_error(err, MNEMO_ERR_INVALID,
                         "cpu graph_prepare: node %d: %s %d (%llu bytes at offset %llu) overruns its buffer of %llu bytes",
                         index, role, slot, static_cast<unsigned long long>(bytes),
                         static_cast<unsigned long long>(t.offset), static_cast<unsigned long long>(rec->size));
    if (written && !rec->owned)
        return set_error(err, MNEMO_ERR_INVALID,
                         "cpu graph_prepare: node %d: %s %d would be written but lives in read-only host memory",
                         index, role, slot);
    *out = static_cast<char*>(t.buffer) + t.offset;
    return MNEMO_OK;
}

bool ensure_scratch(CpuGraph& g, int threads) {
    if (g.scratch_per_thread == 0 || g.scratch_threads >= threads) return true;
    const size_t bytes = g.scratch_per_thread * sizeof(float) * static_cast<size_t>(threads);
    float* p = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    if (!p) return false;
    g.scratch.reset(p);
    g.scratch_threads = threads;
    return true;
}

void run_kernel(void* arg, int ith, int nth) {
    const KernelCall& call = *static_cast<const KernelCall*>(arg);
    call.node->kernel(call, ith, nth);
}

}  // namespace

int32_t supports_node(const mnemo_node& node) {
    char message[256];
    return check_node(node, message, sizeof(message)) ? 1 : 0;
}

mnemo_status graph_prepare(CpuContext& ctx, const mnemo_node* nodes, int32_t n_nodes, void** out_graph,
                           mnemo_error* err) {
    if (n_nodes < 0 || (n_nodes > 0 && !nodes) || !out_graph)
        return set_error(err, MNEMO_ERR_INVALID, "cpu graph_prepare: invalid node list (%d nodes)", n_nodes);
    std::unique_ptr<CpuGraph> g;
    try {
        g = std::make_unique<CpuGraph>();
        g->nodes.resize(static_cast<size_t>(n_nodes));
    } catch (const std::bad_alloc&) {
        return set_error(err, MNEMO_ERR_NO_MEMORY, "cpu graph_prepare: out of memory");
    }
    for (int32_t i = 0; i < n_nodes; ++i) {
        PreparedNode& p = g->nodes[static_cast<size_t>(i)];
        p.node = nodes[i];
        char message[512];
        if (!check_node(p.node, message, sizeof(message)))
            return set_error(err, MNEMO_ERR_UNSUPPORTED, "cpu graph_prepare: node %d: %s", i, message);
        for (int32_t k = 0; k < p.node.n_inputs; ++k) {
            void* addr = nullptr;
            // KV_STORE writes its input 0 (the output aliases it).
            const bool written = p.node.op == MNEMO_OP_KV_STORE && k == 0;
            if (mnemo_status s = resolve(ctx, p.node.inputs[k], i, "input", k, written, &addr, err); s != MNEMO_OK)
                return s;
            p.in[k] = addr;
        }
        if (mnemo_status s = resolve(ctx, p.node.output, i, "output", 0, true, &p.out, err); s != MNEMO_OK) return s;
        p.kernel = select_kernel(p, ctx.isa);
        if (!p.kernel)
            return set_error(err, MNEMO_ERR_UNSUPPORTED, "cpu graph_prepare: node %d (%s): no kernel", i,
                             op_name(p.node.op));
        if (p.scratch_floats > g->scratch_per_thread) g->scratch_per_thread = p.scratch_floats;
        p.parallel = node_work(p.node) >= kParallelWork;
    }
    // Round each thread's share to whole cache lines so that threads never share one.
    g->scratch_per_thread = (g->scratch_per_thread + 15) / 16 * 16;
    if (!ensure_scratch(*g, ctx.pool->size()))
        return set_error(err, MNEMO_ERR_NO_MEMORY, "cpu graph_prepare: out of memory for %zu floats of scratch per thread",
                         g->scratch_per_thread);
    *out_graph = g.release();
    return MNEMO_OK;
}

mnemo_status graph_run(CpuContext& ctx, void* graph, uint64_t* timings_ns, mnemo_error* err) {
    if (!graph) return set_error(err, MNEMO_ERR_INVALID, "cpu graph_run: graph is null");
    CpuGraph& g = *static_cast<CpuGraph*>(graph);
    ThreadPool& pool = *ctx.pool;
    // Only after set_threads raised the thread count since prepare: the one allocation a run
    // can make, and only once.
    if (!ensure_scratch(g, pool.size()))
        return set_error(err, MNEMO_ERR_NO_MEMORY, "cpu graph_run: out of memory for scratch");
    char message[512];
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const PreparedNode& p = g.nodes[i];
        const auto t0 = timings_ns ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        bool ok = true;
        if (p.node.op == MNEMO_OP_GET_ROWS || p.node.op == MNEMO_OP_KV_STORE)
            ok = check_rows_indices(p, message, sizeof(message));
        else if (p.node.op == MNEMO_OP_ATTENTION)
            ok = check_attention_indices(p, message, sizeof(message));
        else if (p.node.op == MNEMO_OP_TAKE_ALONG || p.node.op == MNEMO_OP_EMBEDDING_BAG)
            ok = check_memory_indices(p, message, sizeof(message));
        else if (p.node.op == MNEMO_OP_PK_PAIR_SCORES)
            ok = check_product_key_indices(p, message, sizeof(message));
        else if (p.node.op == MNEMO_OP_MEM_INDEX || p.node.op == MNEMO_OP_PEER_GATE || p.node.op == MNEMO_OP_HIVE)
            ok = check_lookup_indices(p, message, sizeof(message));
        else if (p.node.op == MNEMO_OP_MOE_FFN)
            ok = check_moe_indices(p, message, sizeof(message));
        else if (p.node.op == MNEMO_OP_VQ_DECODE)
            ok = check_vq_indices(p, message, sizeof(message));
        if (!ok) return set_error(err, MNEMO_ERR_INVALID, "cpu graph_run: node %zu: %s", i, message);
        g.next_task.store(0, std::memory_order_relaxed);
        KernelCall call{&p, g.scratch.get(), g.scratch_per_thread, &g.next_task};
        pool.run(run_kernel, &call, p.parallel ? pool.size() : 1);
        if (timings_ns)
            timings_ns[i] = static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    }
    return MNEMO_OK;
}

void graph_release(void* graph) { delete static_cast<CpuGraph*>(graph); }

}  // namespace mnemo_cpu
