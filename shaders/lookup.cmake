# Memory-layer value retrieval: EMBEDDING_BAG, PEER_GATE, HIVE, PK_PAIR_SCORES
# (backends/vulkan/src/kernels/lookup.cpp).
mnemo_shader(embedding_bag embedding_bag.comp)
mnemo_shader(hive hive.comp)
mnemo_shader(peer_gate peer_gate.comp)
mnemo_shader(peer_gate_subgroups peer_gate.comp SUBGROUPS=1)
mnemo_shader(pk_pair_scores pk_pair_scores.comp)
mnemo_shader(pk_pair_scores_f64 pk_pair_scores.comp F64=1)
