// PK_TOPK's kernel entry (product_keys_topk.cpp), registered with the rest of the product-key
// family in product_keys.cpp.
#pragma once

#include "kernel_api.hpp"

namespace mnemo_vk {

bool pk_topk_supports(const DeviceFeatures& f, const mnemo_node& node);
uint64_t pk_topk_scratch(const DeviceFeatures& f, const mnemo_node& node);
void pk_topk_build(KernelBuilder& b);

}  // namespace mnemo_vk
