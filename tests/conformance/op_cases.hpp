// The conformance cases: for every op a list of shapes, dtypes and parameters that a backend must
// compute like the reference. Each op family keeps its cases in op_cases_<family>.hpp (the case
// format and builders: op_case.hpp); tests/test_backend_ops.cpp runs each case on every backend
// device, and a test fails when an op has no case.
//
// Sizes are chosen to hit the paths fast kernels specialise: decode (N=1), small and odd row
// counts, vector tails (odd K, D, head dims), large model-like shapes (4096), and GQA ratios.
#pragma once

#include <vector>

#include "conformance/op_case.hpp"
#include "conformance/op_cases_attention.hpp"
#include "conformance/op_cases_attn_mass.hpp"
#include "conformance/op_cases_elementwise.hpp"
#include "conformance/op_cases_lookup.hpp"
#include "conformance/op_cases_matmul.hpp"
#include "conformance/op_cases_moe.hpp"
#include "conformance/op_cases_norm.hpp"
#include "conformance/op_cases_product_keys.hpp"
#include "conformance/op_cases_rope.hpp"
#include "conformance/op_cases_rows.hpp"
#include "conformance/op_cases_softmax.hpp"
#include "conformance/op_cases_topk.hpp"
#include "conformance/op_cases_vq.hpp"

namespace mnemo::conformance {

// Every conformance case, family by family in the op list's order (a family without its
// <family>_cases does not compile). Built once; generating inputs is left to make_inputs.
inline const std::vector<OpCase>& all_op_cases() {
    static const std::vector<OpCase> cases = [] {
        std::vector<OpCase> v;
#define MNEMO_OP_FAMILY(family) detail::family##_cases(v);
#include "mnemo/abi/mnemo_ops.def"
#undef MNEMO_OP_FAMILY
        return v;
    }();
    return cases;
}

}  // namespace mnemo::conformance
