# RMS_NORM and LAYER_NORM (backends/vulkan/src/kernels/norm.cpp): one workgroup per row. *_sg
# variants use subgroup arithmetic for the workgroup reductions (../reduce_common.glsl); the others
# use a shared-memory tree.
mnemo_shader(rms_norm norm.comp)
mnemo_shader(rms_norm_sg norm.comp REDUCE_SUBGROUPS=1)
mnemo_shader(layer_norm norm.comp OP_LAYER=1)
mnemo_shader(layer_norm_sg norm.comp OP_LAYER=1 REDUCE_SUBGROUPS=1)
