# ARGTOPK and PK_TOPK (backends/vulkan/src/kernels/topk.cpp picks the variant). Selection
# capacity and workgroup size are specialization constants.
mnemo_shader(argtopk_select argtopk.comp)
mnemo_shader(argtopk_sort_local argtopk_sort.comp ELEM_W=2 SORT_LOCAL=1)
mnemo_shader(argtopk_sort_global argtopk_sort.comp ELEM_W=2)
mnemo_shader(pk_topk_sort_local argtopk_sort.comp ELEM_W=3 SORT_LOCAL=1)
mnemo_shader(pk_topk_sort_global argtopk_sort.comp ELEM_W=3)
# Double scores: native (F64) or the exact integer emulation of topk_f64.glsl.
mnemo_shader(pk_topk_select_f64 pk_topk.comp SELECT=1 F64=1)
mnemo_shader(pk_topk_select_soft pk_topk.comp SELECT=1)
mnemo_shader(pk_topk_stage1_f64 pk_topk.comp STAGE1=1 F64=1)
mnemo_shader(pk_topk_stage1_soft pk_topk.comp STAGE1=1)
