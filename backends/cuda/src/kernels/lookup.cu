// (being written)
#include "kernel_api.hpp"
namespace mnemo_cuda {
void register_lookup_kernels() {}
}  // namespace mnemo_cuda
