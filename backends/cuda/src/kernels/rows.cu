// (being written)
#include "kernel_api.hpp"
namespace mnemo_cuda {
void register_rows_kernels() {}
}  // namespace mnemo_cuda
