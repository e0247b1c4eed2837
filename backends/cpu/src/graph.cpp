#include "graph.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <memory>
#include <new>
#include <vector>

#include "kernels/kernel_api.hpp"
#include "node_support.hpp"

namespace mnemo_cpu {
namespace {

using mnemo_backend::set_error;

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

// Below roughly this much work (multiply-adds, or elements touched) a node runs on the calling
// thread alone: handing it out costs more than it saves (a wake-up and a cache-line ping-pong
// are a few microseconds; 32k simple operations take about as long).
constexpr double kParallelWork = 32768.0;

// The tensor's address after checking that it lies inside a buffer of this context (and, when the
// node writes it, a buffer we own); "" or why not.
std::string resolve(const Context& ctx, const mnemo_tensor& t, const std::string& role, bool written, void** out) {
    const BufferRecord* rec = ctx.buffers().find(t.buffer);
    if (!rec) return role + " is not in a buffer of this context";
    const uint64_t bytes = mnemo_backend::nbytes(t);  // node_error checked it does not overflow
    if (!range_fits(t.offset, bytes, rec->size))
        return role + " (" + std::to_string(bytes) + " bytes at offset " + std::to_string(t.offset) + ") overruns its buffer of " +
               std::to_string(rec->size) + " bytes";
    if (written && !rec->owned) return role + " would be written but lives in read-only host memory";
    *out = static_cast<char*>(t.buffer) + t.offset;
    return "";
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

bool node_supported(const Context& ctx, const mnemo_node& node) {
    return mnemo_backend::node_supported(ctx, kernel_for(node.op), ctx.isa(), node);
}

mnemo_status graph_prepare(Context& ctx, const mnemo_node* nodes, int32_t n_nodes, void** out_graph, mnemo_error* err) {
    auto g = std::make_unique<CpuGraph>();
    g->nodes.resize(static_cast<size_t>(n_nodes));
    for (int32_t i = 0; i < n_nodes; ++i) {
        PreparedNode& p = g->nodes[static_cast<size_t>(i)];
        p.node = nodes[i];
        const std::string label = "cpu graph_prepare: " + mnemo_backend::node_label(p.node.op, static_cast<size_t>(i)) + ": ";
        if (std::string why = mnemo::node_error(p.node); !why.empty()) return set_error(err, MNEMO_ERR_UNSUPPORTED, label + why);
        const Kernel* k = kernel_for(p.node.op);
        if (!k) return set_error(err, MNEMO_ERR_UNSUPPORTED, label + "no kernel on this backend");
        for (int32_t in = 0; in < p.node.n_inputs; ++in) {
            // An op that writes in place (KV_STORE) writes its input 0.
            const bool written = in == 0 && mnemo::op_info(p.node.op).output_aliases_input0;
            void* addr = nullptr;
            if (std::string why = resolve(ctx, p.node.inputs[in], "input " + std::to_string(in), written, &addr); !why.empty())
                return set_error(err, MNEMO_ERR_INVALID, label + why);
            p.in[in] = addr;
        }
        if (std::string why = resolve(ctx, p.node.output, "the output", true, &p.out); !why.empty())
            return set_error(err, MNEMO_ERR_INVALID, label + why);
        p.kernel = k->select(p, ctx.isa());
        if (!p.kernel) return set_error(err, MNEMO_ERR_UNSUPPORTED, label + "no kernel for these dtypes");
        p.check_indices = k->check_indices;
        if (p.scratch_floats > g->scratch_per_thread) g->scratch_per_thread = p.scratch_floats;
        const double work = k->work ? k->work(p.node) : static_cast<double>(numel(p.node.output));
        p.parallel = work >= kParallelWork;
    }
    // Round each thread's share to whole cache lines so that threads never share one.
    g->scratch_per_thread = (g->scratch_per_thread + 15) / 16 * 16;
    if (!ensure_scratch(*g, ctx.pool().size()))
        return set_error(err, MNEMO_ERR_NO_MEMORY,
                         "cpu graph_prepare: out of memory for " + std::to_string(g->scratch_per_thread) + " floats of scratch per thread");
    *out_graph = g.release();
    return MNEMO_OK;
}

mnemo_status graph_run(Context& ctx, void* graph, uint64_t* timings_ns, mnemo_error* err) {
    if (!graph) return set_error(err, MNEMO_ERR_INVALID, "cpu graph_run: graph is null");
    CpuGraph& g = *static_cast<CpuGraph*>(graph);
    ThreadPool& pool = ctx.pool();
    // Only after set_threads raised the thread count since prepare: the one allocation a run
    // can make, and only once.
    if (!ensure_scratch(g, pool.size())) return set_error(err, MNEMO_ERR_NO_MEMORY, "cpu graph_run: out of memory for scratch");
    char message[512];
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const PreparedNode& p = g.nodes[i];
        const auto t0 = timings_ns ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        if (p.check_indices && !p.check_indices(p, message, sizeof(message)))
            return set_error(err, MNEMO_ERR_INVALID, "cpu graph_run: node " + std::to_string(i) + ": " + message);
        g.next_task.store(0, std::memory_order_relaxed);
        KernelCall call{&p, g.scratch.get(), g.scratch_per_thread, &g.next_task};
        pool.run(run_kernel, &call, p.parallel ? pool.size() : 1);
        if (timings_ns)
            timings_ns[i] = static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    }
    return MNEMO_OK;
}

void graph_release(Context&, void* graph) { delete static_cast<CpuGraph*>(graph); }

}  // namespace mnemo_cpu
