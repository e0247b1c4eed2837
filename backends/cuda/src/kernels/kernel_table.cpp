// The op -> kernel table, filled once by each family's register function.
#include "backend_common.hpp"
#include "kernel_api.hpp"

namespace mnemo_cuda {

namespace {
mnemo_backend::KernelTable<Kernel> g_table;

void fill() {
    register_elementwise_kernels();
    register_norm_kernels();
    register_rows_kernels();
    register_attention_kernels();
    register_matmul_kernels();
    register_moe_kernels();
    register_topk_kernels();
    register_product_key_kernels();
    register_lookup_kernels();
    register_attn_mass_kernels();
    register_vq_kernels();
}
}  // namespace

void register_kernel(int32_t op, Kernel k) { g_table.set(op, k); }

const Kernel* kernel_for(int32_t op) { return g_table.get(op, fill); }

}  // namespace mnemo_cuda
