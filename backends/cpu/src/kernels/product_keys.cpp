// The query side of product-key memories (PKM, Memory+, UltraMem): PK_SCORE (sub-key scores),
// PK_TOPK (two-stage top-k over the product keys) and PK_PAIR_SCORES (scores of chosen pairs).
// Each op's kernels are in their own file (product_keys.hpp); this one registers them.
#include "product_keys.hpp"

namespace mnemo_cpu {

void register_product_keys_kernels() {
    register_kernel(MNEMO_OP_PK_SCORE, {select_pk_score, pk_score_work, nullptr});
    register_kernel(MNEMO_OP_PK_TOPK, {select_pk_topk, pk_topk_work, nullptr});
    register_kernel(MNEMO_OP_PK_PAIR_SCORES, {select_pk_pair_scores, pk_pair_scores_work, check_pk_pair_scores});
}

}  // namespace mnemo_cpu
