// The conformance cases: for every op a list of shapes, dtypes and parameters that a backend must
// compute like the reference implementation. Each op family keeps its cases in op_cases_<family>.hpp (the case
// format and builders: op_case.hpp); tests/test_backend_ops.cpp runs each case on every backend
// device, and a test fails when an op has no case.
//
// Sizes are chosen to hit the paths fast kernels specialise: decode (N=1), small and odd row
// counts, vector tails (odd K, D, head dims), large model-like shapes (4096), and GQA ratios.
#pragma once

#include <vector>

#include "conformance/op_case.hpp"

namespace mnemo::conformance {

// Every conformance case, family by family in the op list's order (op_cases.cpp; a family without
// its <family>_cases does not compile). Built once; generating inputs is left to make_inputs.
const std::vector<OpCase>& all_op_cases();

}  // namespace mnemo::conformance
