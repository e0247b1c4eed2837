# The lookup family, memory-layer value retrieval (backends/vulkan/src/kernels/lookup.cpp):
# EMBEDDING_BAG, MEM_INDEX, PEER_GATE, HIVE.
mnemo_shader(embedding_bag embedding_bag.comp)
mnemo_shader(mem_index mem_index.comp)
mnemo_shader(mem_index_shuffle mem_index.comp SHUFFLE=1)
mnemo_shader(peer_gate peer_gate.comp)
mnemo_shader(peer_gate_subgroups peer_gate.comp SUBGROUPS=1)
mnemo_shader(hive hive.comp)
# A block-quantized value table, pre-value table or latent bank (shaders/quant.glsl;
# MNEMO_QUANT_TYPES in backends/vulkan/CMakeLists.txt): embedding_bag_q8_0, peer_gate_q8_0,
# peer_gate_subgroups_q8_0, hive_q8_0, ...
foreach(_q ${MNEMO_QUANT_TYPES})
  string(REPLACE "=" ";" _q ${_q})
  list(GET _q 0 _qname)
  list(GET _q 1 _qnum)
  mnemo_shader(embedding_bag_${_qname} embedding_bag.comp Q_TYPE=${_qnum})
  mnemo_shader(peer_gate_${_qname} peer_gate.comp Q_TYPE=${_qnum})
  mnemo_shader(peer_gate_subgroups_${_qname} peer_gate.comp Q_TYPE=${_qnum} SUBGROUPS=1)
  mnemo_shader(hive_${_qname} hive.comp Q_TYPE=${_qnum})
endforeach()
