// Conformance cases of MOE_FFN. Included by op_cases.hpp after its helpers.
#pragma once

namespace mnemo::conformance::detail {

inline void moe(std::vector<OpCase>& out) { (void)out; }

}  // namespace mnemo::conformance::detail
