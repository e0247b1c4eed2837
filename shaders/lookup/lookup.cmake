# The lookup family, memory-layer value retrieval (backends/vulkan/src/kernels/lookup.cpp):
# EMBEDDING_BAG, MEM_INDEX, PEER_GATE, HIVE.
mnemo_shader(embedding_bag embedding_bag.comp)
mnemo_shader(mem_index mem_index.comp)
mnemo_shader(mem_index_shuffle mem_index.comp SHUFFLE=1)
mnemo_shader(peer_gate peer_gate.comp)
mnemo_shader(peer_gate_subgroups peer_gate.comp SUBGROUPS=1)
mnemo_shader(hive hive.comp)
