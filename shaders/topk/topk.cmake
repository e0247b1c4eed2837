# ARGTOPK (backends/vulkan/src/kernels/topk.cpp picks the variant; the machinery is shared with
# PK_TOPK: ../topk_common.glsl). Selection capacity and workgroup size are specialization
# constants. TAKE_ALONG: one invocation per output element.
mnemo_shader(argtopk_select argtopk.comp)
mnemo_shader(argtopk_sort_local argtopk_sort.comp ELEM_W=2 SORT_LOCAL=1)
mnemo_shader(argtopk_sort_global argtopk_sort.comp ELEM_W=2)
mnemo_shader(take_along take_along.comp)
