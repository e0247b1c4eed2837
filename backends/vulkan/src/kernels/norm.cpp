// (being written)
#include "kernel_api.hpp"
namespace mnemo_vk {
void register_norm_kernels() {}
}  // namespace mnemo_vk
