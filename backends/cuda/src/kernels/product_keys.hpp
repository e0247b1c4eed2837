// PK_TOPK's kernel entry (product_keys_topk.cu), registered with the rest of the product-key
// family in product_keys.cu.
#pragma once

#include "kernel_api.hpp"

namespace mnemo_cuda {

bool pk_topk_supports(const DeviceProps& p, const mnemo_node& node);
uint64_t pk_topk_scratch(const DeviceProps& p, const mnemo_node& node);
void pk_topk_build(KernelBuilder& b);

}  // namespace mnemo_cuda
