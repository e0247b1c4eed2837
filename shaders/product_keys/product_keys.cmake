# The product-key family (backends/vulkan/src/kernels/product_keys*.cpp).
# PK_SCORE: tile shape by specialization constants.
mnemo_shader(pk_score pk_score.comp)
# PK_TOPK: stage 1 and the pair selection in double, native (F64) or the exact integer emulation of
# ../topk_f64.glsl; long rows are sorted by ARGTOPK's sort over 3-word tuples.
mnemo_shader(pk_topk_select_f64 pk_topk.comp SELECT=1 F64=1)
mnemo_shader(pk_topk_select_soft pk_topk.comp SELECT=1)
mnemo_shader(pk_topk_stage1_f64 pk_topk.comp STAGE1=1 F64=1)
mnemo_shader(pk_topk_stage1_soft pk_topk.comp STAGE1=1)
mnemo_shader(pk_topk_sort_local ../topk/argtopk_sort.comp ELEM_W=3 SORT_LOCAL=1)
mnemo_shader(pk_topk_sort_global ../topk/argtopk_sort.comp ELEM_W=3)
# PK_PAIR_SCORES: Tucker sums in double where the device has fp64.
mnemo_shader(pk_pair_scores pk_pair_scores.comp)
mnemo_shader(pk_pair_scores_f64 pk_pair_scores.comp F64=1)
