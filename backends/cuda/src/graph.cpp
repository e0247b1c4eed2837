#include "graph.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "cuda_check.hpp"
#include "kernels/kernel_api.hpp"
#include "node_support.hpp"

namespace mnemo_cuda {

namespace {

using mnemo_backend::bad_index_message;
using mnemo_backend::node_label;

struct Graph {
    std::vector<int32_t> ops;                  // op of each node
    std::vector<std::vector<Launch>> launches;  // per node
    Buffer* scratch = nullptr;
    cudaGraphExec_t exec = nullptr;  // the captured replay (made by the first plain run)
    bool capture_failed = false;     // then every run launches directly
    std::vector<cudaEvent_t> events;
};

// MNEMO_CUDA_GRAPHS=0 launches node by node every run (to tell a capture problem from a kernel one).
bool graphs_enabled() {
    const char* v = std::getenv("MNEMO_CUDA_GRAPHS");
    return !(v && std::strcmp(v, "0") == 0);
}

bool enqueue_all(Context& ctx, Graph& g, std::string& why) {
    ctx.clear_status_async();
    for (size_t n = 0; n < g.launches.size(); ++n)
        for (const Launch& l : g.launches[n]) {
            const cudaError_t e = l(ctx.stream());
            if (e != cudaSuccess) {
                why = node_label(g.ops[n], n) + ": " + cuda_fail("launch", e);
                return false;
            }
        }
    return true;
}

// Captures the whole step into a CUDA graph: decode steps then cost one launch instead of one
// per kernel. Buffers and shapes never change after prepare, so the graph never needs updating.
bool capture(Context& ctx, Graph& g, std::string& why) {
    cudaError_t e = cudaStreamBeginCapture(ctx.stream(), cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        why = cuda_fail("cudaStreamBeginCapture", e);
        return false;
    }
    std::string launch_why;
    const bool ok = enqueue_all(ctx, g, launch_why);
    cudaGraph_t graph = nullptr;
    e = cudaStreamEndCapture(ctx.stream(), &graph);
    if (!ok || e != cudaSuccess) {
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        why = ok ? cuda_fail("cudaStreamEndCapture", e) : launch_why;
        return false;
    }
    e = cudaGraphInstantiate(&g.exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        g.exec = nullptr;
        cudaGetLastError();
        why = cuda_fail("cudaGraphInstantiate", e);
        return false;
    }
    return true;
}

void destroy(Context& ctx, Graph* g) {
    if (!g) return;
    std::string ignored;
    ctx.activate(ignored);
    cudaStreamSynchronize(ctx.stream());
    if (g->exec) cudaGraphExecDestroy(g->exec);
    for (cudaEvent_t e : g->events) cudaEventDestroy(e);
    if (g->scratch) ctx.release(g->scratch);
    delete g;
}

}  // namespace

bool node_supported(const Context& ctx, const mnemo_node& node) {
    return mnemo_backend::node_supported(ctx, kernel_for(node.op), ctx.props(), node);
}

mnemo_status graph_prepare(Context& ctx, const mnemo_node* nodes, int32_t n_nodes, void** out, mnemo_error* err) {
    std::string why;
    if (!ctx.activate(why)) return set_error(err, MNEMO_ERR_DEVICE, "cuda graph_prepare: " + why);
    auto destroy_graph = [&ctx](Graph* graph) { destroy(ctx, graph); };  // on every early return
    std::unique_ptr<Graph, decltype(destroy_graph)> g(new Graph, destroy_graph);
    auto make_scratch = [&](uint64_t bytes, std::string& why) { return (g->scratch = ctx.alloc(bytes, why)) != nullptr; };
    auto build_node = [&](int32_t i, const Kernel& kernel, std::string&) {
        // One scratch region reused by every node: the stream runs nodes in order.
        KernelBuilder b(ctx, nodes[i], static_cast<uint32_t>(i), g->scratch ? g->scratch->ptr : nullptr);
        kernel.build(b);
        g->ops.push_back(nodes[i].op);
        g->launches.push_back(std::move(b.launches()));
        return true;
    };
    if (mnemo_status s = mnemo_backend::prepare_nodes<KernelError>(ctx, ctx.props(), nodes, n_nodes, kernel_for, make_scratch,
                                                                   build_node, why);
        s != MNEMO_OK)
        return set_error(err, s, "cuda graph_prepare: " + why);
    *out = g.release();
    return MNEMO_OK;
}

mnemo_status graph_run(Context& ctx, void* graph, uint64_t* timings_ns, mnemo_error* err) {
    auto* g = static_cast<Graph*>(graph);
    if (!g) return set_error(err, MNEMO_ERR_INVALID, "cuda graph_run: graph is null");
    std::string why;
    if (!ctx.activate(why)) return set_error(err, MNEMO_ERR_DEVICE, "cuda graph_run: " + why);
    if (timings_ns) {
        // Node by node between events: each node's time is its own.
        if (g->events.empty()) {
            g->events.resize(g->launches.size() + 1);
            for (cudaEvent_t& e : g->events)
                if (cudaEventCreate(&e) != cudaSuccess) return set_error(err, MNEMO_ERR_DEVICE, "cuda graph_run: cudaEventCreate failed");
        }
        ctx.clear_status_async();
        cudaEventRecord(g->events[0], ctx.stream());
        for (size_t n = 0; n < g->launches.size(); ++n) {
            for (const Launch& l : g->launches[n]) {
                const cudaError_t e = l(ctx.stream());
                if (e != cudaSuccess) return set_error(err, MNEMO_ERR_DEVICE, "cuda graph_run: " + node_label(g->ops[n], n) + ": " + cuda_fail("launch", e));
            }
            cudaEventRecord(g->events[n + 1], ctx.stream());
        }
    } else if (graphs_enabled() && !g->capture_failed && (g->exec || capture(ctx, *g, why))) {
        const cudaError_t e = cudaGraphLaunch(g->exec, ctx.stream());
        if (e != cudaSuccess) return set_error(err, MNEMO_ERR_DEVICE, "cuda graph_run: " + cuda_fail("cudaGraphLaunch", e));
    } else {
        if (!why.empty()) g->capture_failed = true;  // capture refused once: launch directly from now on
        why.clear();
        if (!enqueue_all(ctx, *g, why)) return set_error(err, MNEMO_ERR_DEVICE, "cuda graph_run: " + why);
    }
    KernelStatus status{};
    if (!ctx.finish(&status, why)) return set_error(err, MNEMO_ERR_DEVICE, "cuda graph_run: " + why);
    if (status.code != 0) {
        const size_t n = static_cast<size_t>(status.node);
        return set_error(err, MNEMO_ERR_INVALID,
                         bad_index_message(n < g->ops.size() ? g->ops[n] : MNEMO_OP_NONE, n, status.value, status.limit));
    }
    if (timings_ns)
        for (size_t n = 0; n < g->launches.size(); ++n) {
            float ms = 0.0f;
            cudaEventElapsedTime(&ms, g->events[n], g->events[n + 1]);
            timings_ns[n] = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
        }
    return MNEMO_OK;
}

void graph_release(Context& ctx, void* graph) { destroy(ctx, static_cast<Graph*>(graph)); }

}  // namespace mnemo_cuda
