// References of product-key scoring and two-stage top-k (PK_SCORE, PK_TOPK, PK_PAIR_SCORES).
#include "ops_reference_detail.hpp"

namespace mnemo::reference {

void pk_score(const Ctx& c) { c.fail("reference not written yet"); }
void pk_topk(const Ctx& c) { c.fail("reference not written yet"); }
void pk_pair_scores(const Ctx& c) { c.fail("reference not written yet"); }

}  // namespace mnemo::reference
