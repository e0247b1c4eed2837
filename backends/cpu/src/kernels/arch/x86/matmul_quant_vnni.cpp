// The AVX-512 VNNI integer kernels of MATMUL (decode and prefill) with a block-quantized W:
// VPDPBUSD on 256-bit registers (AVX-512 VL), chosen at run time where the CPU has it (use_avx512_vnni(); the body:
// matmul_quant_x86.inl). Nothing else in the module is built for AVX-512.
#if !defined(__x86_64__) && !defined(__i386__)
#error "arch/x86/ files are compiled for x86 targets only"
#endif

#define QK_NS vnni_decode
#define QK_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
#define QK_VNNI 1
#define QK_ENTRY integer_kernel_vnni
#include "matmul_quant_x86.inl"

namespace mnemo_cpu::quant {
void quantize_rows_vnni(const float* x, int64_t rows, int64_t k, void* out) { vnni_decode::quantize_rows(x, rows, k, out); }
}  // namespace mnemo_cpu::quant
