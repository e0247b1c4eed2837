// The op -> kernel table, filled once by each family's register function.
#include <mutex>

#include "kernel_api.hpp"

namespace mnemo_cuda {

namespace {
Kernel g_table[MNEMO_OP_COUNT_];
std::once_flag g_once;

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
}
}  // namespace

void register_kernel(int32_t op, Kernel k) {
    if (op > 0 && op < MNEMO_OP_COUNT_) g_table[op] = k;
}

const Kernel* kernel_for(int32_t op) {
    std::call_once(g_once, fill);
    if (op <= 0 || op >= MNEMO_OP_COUNT_ || !g_table[op].build) return nullptr;
    return &g_table[op];
}

}  // namespace mnemo_cuda
