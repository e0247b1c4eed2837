// (being written)
#include "kernel_api.hpp"
namespace mnemo_vk {
void register_product_key_kernels() {}
}  // namespace mnemo_vk
