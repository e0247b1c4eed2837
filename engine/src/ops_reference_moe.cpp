// References of the routed experts of an MoE FFN (MOE_FFN).
#include "ops_reference_detail.hpp"

namespace mnemo::reference {

void moe_ffn(const Ctx& c) { c.fail("reference not written yet"); }

}  // namespace mnemo::reference
