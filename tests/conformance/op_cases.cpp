// all_op_cases(): the case lists of op_cases_<family>.hpp, built in this one file (their builders
// are large inline functions; every file that included them compiled them again).
#include "conformance/op_cases.hpp"

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

const std::vector<OpCase>& all_op_cases() {
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
