# MATMUL (backends/vulkan/src/kernels/matmul.cpp picks the variant).
# Mat-vec for a few rows of x (matmul_vec.comp): load width x weight dtype x reduction
# (subgroup ops, or shared memory when the device has no subgroup arithmetic).
foreach(_red sg sh)
  if(_red STREQUAL "sg")
    set(_red_def USE_SUBGROUPS=1)
  else()
    set(_red_def NO_SUBGROUPS=1)
  endif()
  mnemo_shader(matmul_vec_f32_vec_${_red} matmul_vec.comp W_F32=1 LOAD_VEC=1 ${_red_def})
  mnemo_shader(matmul_vec_f16_vec_${_red} matmul_vec.comp W_F16=1 LOAD_VEC=1 ${_red_def})
  mnemo_shader(matmul_vec_bf16_vec_${_red} matmul_vec.comp W_BF16=1 LOAD_VEC=1 ${_red_def})
  mnemo_shader(matmul_vec_f16_word_${_red} matmul_vec.comp W_F16=1 LOAD_WORD=1 ${_red_def})
  mnemo_shader(matmul_vec_bf16_word_${_red} matmul_vec.comp W_BF16=1 LOAD_WORD=1 ${_red_def})
  mnemo_shader(matmul_vec_any_${_red} matmul_vec.comp W_ANY=1 ${_red_def})
endforeach()
# Block-quantized W (shaders/quant.glsl; MNEMO_QUANT_TYPES in backends/vulkan/CMakeLists.txt):
# mat-vec with either reduction, x read by floats or (xvec: 16-byte aligned) in vec4s, and the
# tiled GEMM.
foreach(_q ${MNEMO_QUANT_TYPES})
  string(REPLACE "=" ";" _q ${_q})
  list(GET _q 0 _qname)
  list(GET _q 1 _qnum)
  mnemo_shader(matmul_vec_${_qname}_sg matmul_vec.comp Q_TYPE=${_qnum} USE_SUBGROUPS=1)
  mnemo_shader(matmul_vec_${_qname}_sh matmul_vec.comp Q_TYPE=${_qnum} NO_SUBGROUPS=1)
  mnemo_shader(matmul_vec_${_qname}_xvec_sg matmul_vec.comp Q_TYPE=${_qnum} X_VEC=1 USE_SUBGROUPS=1)
  mnemo_shader(matmul_vec_${_qname}_xvec_sh matmul_vec.comp Q_TYPE=${_qnum} X_VEC=1 NO_SUBGROUPS=1)
  mnemo_shader(matmul_tiled_${_qname} matmul_tiled.comp Q_TYPE=${_qnum})
endforeach()
# Shared-memory tiled GEMM for many rows of x (matmul_tiled.comp).
mnemo_shader(matmul_tiled_f32 matmul_tiled.comp W_F32=1)
mnemo_shader(matmul_tiled_f16_word matmul_tiled.comp W_F16=1 LOAD_WORD=1)
mnemo_shader(matmul_tiled_bf16_word matmul_tiled.comp W_BF16=1 LOAD_WORD=1)
mnemo_shader(matmul_tiled_any matmul_tiled.comp W_ANY=1)
