// (being written)
#include "kernel_api.hpp"
namespace mnemo_cuda {
void register_product_key_kernels() {}
}  // namespace mnemo_cuda
