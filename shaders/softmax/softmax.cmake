# SOFTMAX (backends/vulkan/src/kernels/softmax.cpp): one workgroup per row; softmax_sg reduces
# with subgroup arithmetic (../reduce_common.glsl), softmax with a shared-memory tree.
mnemo_shader(softmax softmax.comp)
mnemo_shader(softmax_sg softmax.comp REDUCE_SUBGROUPS=1)
