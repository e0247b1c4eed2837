// (being written)
#include "kernel_api.hpp"
namespace mnemo_vk {
void register_topk_kernels() {}
}  // namespace mnemo_vk
