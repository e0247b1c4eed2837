#include "graph.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "kernels/kernel_api.hpp"
#include "node_support.hpp"

namespace mnemo_vk {

namespace {

using mnemo_backend::bad_index_message;
using mnemo_backend::node_label;

struct NodeDispatches {
    int32_t op = 0;
    uint32_t first = 0, count = 0;  // slice of Graph::dispatches
};

struct Graph {
    std::vector<NodeDispatches> nodes;
    std::vector<Dispatch> dispatches;
    std::vector<VkPipeline> pipelines;  // one per dispatch
    std::vector<uint8_t> barrier_before;  // 1 where a barrier precedes the dispatch
    Buffer* scratch = nullptr;
    VkCommandBuffer plain = VK_NULL_HANDLE;     // the fast recording
    VkCommandBuffer profiled = VK_NULL_HANDLE;  // timestamps around each node (made on first use)
    VkQueryPool queries = VK_NULL_HANDLE;
};

bool overlaps(const Range& a, const Range& b) { return a.buffer == b.buffer && a.begin < b.end && b.begin < a.end; }
bool overlaps_any(const Range& r, const std::vector<Range>& set) {
    return std::any_of(set.begin(), set.end(), [&](const Range& s) { return overlaps(r, s); });
}

// Marks the dispatches that must wait for earlier ones: a read or write of bytes written since
// the last barrier (RAW, WAW), or a write of bytes read since then (WAR).
void place_barriers(Graph& g) {
    std::vector<Range> written, read;
    g.barrier_before.assign(g.dispatches.size(), 0);
    for (size_t i = 0; i < g.dispatches.size(); ++i) {
        const Dispatch& d = g.dispatches[i];
        bool hazard = false;
        for (const Range& r : d.reads) hazard = hazard || overlaps_any(r, written);
        for (const Range& w : d.writes) hazard = hazard || overlaps_any(w, written) || overlaps_any(w, read);
        if (hazard) {
            g.barrier_before[i] = 1;
            written.clear();
            read.clear();
        }
        read.insert(read.end(), d.reads.begin(), d.reads.end());
        written.insert(written.end(), d.writes.begin(), d.writes.end());
    }
}

void compute_barrier(const DeviceFunctions& vk, VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
                     VkPipelineStageFlags dst, VkAccessFlags dst_access) {
    auto mb = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    mb.srcAccessMask = src_access;
    mb.dstAccessMask = dst_access;
    vk.vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

constexpr VkAccessFlags kShaderRW = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;

// Records the whole graph. With `profile`, every node is fenced by barriers and bracketed by
// timestamps so that each node's time is its own.
bool record(Context& ctx, Graph& g, VkCommandBuffer cb, bool profile, std::string& why) {
    const DeviceFunctions& vk = ctx.vk();
    auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    VkResult r = vk.vkBeginCommandBuffer(cb, &bi);
    if (r != VK_SUCCESS) {
        why = std::string("vkBeginCommandBuffer: ") + result_name(r);
        return false;
    }
    if (profile) vk.vkCmdResetQueryPool(cb, g.queries, 0, static_cast<uint32_t>(g.nodes.size() + 1));
    // Inputs were written by the host or by staged copies submitted just before.
    compute_barrier(vk, cb, VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW);
    VkDescriptorSet set = ctx.status_set();
    vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, ctx.pipeline_layout(), 0, 1, &set, 0, nullptr);
    if (profile) vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, g.queries, 0);
    VkPipeline bound = VK_NULL_HANDLE;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
        const NodeDispatches& nd = g.nodes[n];
        for (uint32_t k = nd.first; k < nd.first + nd.count; ++k) {
            const Dispatch& d = g.dispatches[k];
            const bool node_fence = profile && k == nd.first && n > 0;
            if (g.barrier_before[k] || node_fence)
                compute_barrier(vk, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW);
            if (g.pipelines[k] != bound) {
                vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, g.pipelines[k]);
                bound = g.pipelines[k];
            }
            if (d.push_bytes) vk.vkCmdPushConstants(cb, ctx.pipeline_layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, d.push_bytes, d.push);
            vk.vkCmdDispatch(cb, d.groups[0], d.groups[1], d.groups[2]);
        }
        if (profile) {
            if (nd.count == 0 && n > 0)
                compute_barrier(vk, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW);
            vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, g.queries, static_cast<uint32_t>(n + 1));
        }
    }
    // Results go to the host (mapped reads) or to staged copies.
    compute_barrier(vk, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                    VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT | kShaderRW);
    r = vk.vkEndCommandBuffer(cb);
    if (r != VK_SUCCESS) {
        why = std::string("vkEndCommandBuffer: ") + result_name(r);
        return false;
    }
    return true;
}

void destroy(Context& ctx, Graph* g) {
    if (!g) return;
    ctx.free_command_buffer(g->plain);
    ctx.free_command_buffer(g->profiled);
    if (g->queries) ctx.vk().vkDestroyQueryPool(ctx.device(), g->queries, nullptr);
    if (g->scratch) ctx.release(g->scratch);
    delete g;
}

}  // namespace

bool node_supported(const Context& ctx, const mnemo_node& node) {
    return mnemo_backend::node_supported(ctx, kernel_for(node.op), ctx.features(), node);
}

mnemo_status graph_prepare(Context& ctx, const mnemo_node* nodes, int32_t n_nodes, void** out, mnemo_error* err) {
    auto destroy_graph = [&ctx](Graph* graph) { destroy(ctx, graph); };  // on every early return
    std::unique_ptr<Graph, decltype(destroy_graph)> g(new Graph, destroy_graph);
    auto make_scratch = [&](uint64_t bytes, std::string& why) { return (g->scratch = ctx.alloc(bytes, why)) != nullptr; };
    auto build_node = [&](int32_t i, const Kernel& kernel, std::string& why) {
        // Scratch is shared by every node (barriers order the reuse).
        KernelBuilder b(ctx, nodes[i], static_cast<uint32_t>(i), g->scratch);
        kernel.build(b);
        g->nodes.push_back({nodes[i].op, static_cast<uint32_t>(g->dispatches.size()), static_cast<uint32_t>(b.dispatches().size())});
        for (Dispatch& d : b.dispatches()) {
            VkPipeline p = ctx.pipeline(d.pipeline, why);
            if (!p) return false;
            g->pipelines.push_back(p);
            g->dispatches.push_back(std::move(d));
        }
        return true;
    };
    std::string why;
    if (mnemo_status s = mnemo_backend::prepare_nodes<KernelError>(ctx, ctx.features(), nodes, n_nodes, kernel_for, make_scratch,
                                                                   build_node, why);
        s != MNEMO_OK)
        return set_error(err, s, "vulkan graph_prepare: " + why);
    place_barriers(*g);
    g->plain = ctx.new_command_buffer(why);
    if (!g->plain || !record(ctx, *g, g->plain, false, why)) return set_error(err, MNEMO_ERR_DEVICE, "vulkan graph_prepare: " + why);
    *out = g.release();
    return MNEMO_OK;
}

mnemo_status graph_run(Context& ctx, void* graph, uint64_t* timings_ns, mnemo_error* err) {
    auto* g = static_cast<Graph*>(graph);
    if (!g) return set_error(err, MNEMO_ERR_INVALID, "vulkan graph_run: graph is null");
    std::string why;
    VkCommandBuffer cb = g->plain;
    const bool profile = timings_ns && ctx.features().timestamps;
    if (profile) {
        if (!g->profiled) {
            auto qi = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
            qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
            qi.queryCount = static_cast<uint32_t>(g->nodes.size() + 1);
            if (ctx.vk().vkCreateQueryPool(ctx.device(), &qi, nullptr, &g->queries) != VK_SUCCESS)
                return set_error(err, MNEMO_ERR_DEVICE, "vulkan graph_run: cannot create the timestamp query pool");
            g->profiled = ctx.new_command_buffer(why);
            if (!g->profiled || !record(ctx, *g, g->profiled, true, why)) {
                ctx.free_command_buffer(g->profiled);
                g->profiled = VK_NULL_HANDLE;
                return set_error(err, MNEMO_ERR_DEVICE, "vulkan graph_run: " + why);
            }
        }
        cb = g->profiled;
    }
    KernelStatus status{};
    if (!ctx.run(cb, &status, why)) return set_error(err, MNEMO_ERR_DEVICE, "vulkan graph_run: " + why);
    if (status.code != 0) {
        const size_t n = status.node;
        return set_error(err, MNEMO_ERR_INVALID,
                         bad_index_message(n < g->nodes.size() ? g->nodes[n].op : MNEMO_OP_NONE, n, status.value, status.limit));
    }
    if (timings_ns) {
        std::fill(timings_ns, timings_ns + g->nodes.size(), 0);
        if (profile) {
            std::vector<uint64_t> stamps(g->nodes.size() + 1);
            const VkResult r = ctx.vk().vkGetQueryPoolResults(ctx.device(), g->queries, 0, static_cast<uint32_t>(stamps.size()),
                                                              stamps.size() * 8, stamps.data(), 8,
                                                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
            if (r == VK_SUCCESS)
                for (size_t i = 0; i < g->nodes.size(); ++i)
                    timings_ns[i] = static_cast<uint64_t>(static_cast<double>(stamps[i + 1] - stamps[i]) *
                                                          ctx.features().timestamp_period_ns);
        }
    }
    return MNEMO_OK;
}

void graph_release(Context& ctx, void* graph) { destroy(ctx, static_cast<Graph*>(graph)); }

}  // namespace mnemo_vk
