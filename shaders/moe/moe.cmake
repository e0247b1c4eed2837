# MOE_FFN (backends/vulkan/src/kernels/moe.cpp): mat-vec passes for decode, grouped GEMMs for prefill.
mnemo_shader(moe_mv_up moe_mv.comp UP=1)
mnemo_shader(moe_mv_up_sg moe_mv.comp UP=1 SUBGROUPS=1)
mnemo_shader(moe_mv_down moe_mv.comp DOWN=1)
mnemo_shader(moe_mv_down_sg moe_mv.comp DOWN=1 SUBGROUPS=1)
mnemo_shader(moe_group moe_group.comp)
mnemo_shader(moe_gemm_up moe_gemm.comp UP=1)
mnemo_shader(moe_gemm_down moe_gemm.comp DOWN=1)
mnemo_shader(moe_combine moe_combine.comp)
