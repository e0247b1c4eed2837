// References of the UltraMem index pipeline, the PEER gate and HIVE (MEM_INDEX, PEER_GATE, HIVE).
#include "ops_reference_detail.hpp"

namespace mnemo::reference {

void mem_index(const Ctx& c) { c.fail("reference not written yet"); }
void peer_gate(const Ctx& c) { c.fail("reference not written yet"); }
void hive(const Ctx& c) { c.fail("reference not written yet"); }

}  // namespace mnemo::reference
