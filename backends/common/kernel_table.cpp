// The op -> kernel table of one backend module, filled once by the register function of every op
// family in the op list (mnemo/abi/mnemo_ops.def): kernels/<family>.cpp (or .cu) of the module
// defines register_<family>_kernels(), so a module that lacks a family does not link.
//
// One source for every module: each compiles it with MNEMO_BACKEND_NAMESPACE set to its own
// namespace, whose kernels/kernel_api.hpp (found on the module's include path) declares Kernel and
// the two functions defined here.
#include "backend_common.hpp"
#include "kernels/kernel_api.hpp"

#ifndef MNEMO_BACKEND_NAMESPACE
#error "compile with -DMNEMO_BACKEND_NAMESPACE=<the module's namespace>"
#endif

namespace MNEMO_BACKEND_NAMESPACE {

#define MNEMO_OP_FAMILY(family) void register_##family##_kernels();
#include "mnemo/abi/mnemo_ops.def"
#undef MNEMO_OP_FAMILY

namespace {

mnemo_backend::KernelTable<Kernel> g_table;

void fill() {
#define MNEMO_OP_FAMILY(family) register_##family##_kernels();
#include "mnemo/abi/mnemo_ops.def"
#undef MNEMO_OP_FAMILY
}

}  // namespace

void register_kernel(int32_t op, Kernel k) { g_table.set(op, k); }

const Kernel* kernel_for(int32_t op) { return g_table.get(op, fill); }

}  // namespace MNEMO_BACKEND_NAMESPACE
