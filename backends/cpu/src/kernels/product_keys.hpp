// The product-key family's kernel entries, one file per op: PK_SCORE (product_keys_score.cpp, its
// AVX2 and NEON paths in arch/x86/ and arch/arm/), PK_TOPK (product_keys_topk.cpp),
// PK_PAIR_SCORES (product_keys_pairs.cpp); product_keys.cpp registers them.
#pragma once

#include "kernel_api.hpp"

namespace mnemo_cpu {

KernelFn select_pk_score(PreparedNode& node, Isa isa);
double pk_score_work(const mnemo_node& node);

KernelFn select_pk_topk(PreparedNode& node, Isa isa);
double pk_topk_work(const mnemo_node& node);

KernelFn select_pk_pair_scores(PreparedNode& node, Isa isa);
double pk_pair_scores_work(const mnemo_node& node);
bool check_pk_pair_scores(const PreparedNode& node, char* message, size_t cap);

}  // namespace mnemo_cpu
