// Conformance cases of PK_SCORE, PK_TOPK, PK_PAIR_SCORES. Included by op_cases.hpp after its helpers.
#pragma once

namespace mnemo::conformance::detail {

inline void product_keys(std::vector<OpCase>& out) { (void)out; }

}  // namespace mnemo::conformance::detail
