# TAKE_ALONG (shaders/take_along.comp) and MEM_INDEX (shaders/mem_index.comp); backends/vulkan/src/kernels/memory.cpp.
mnemo_shader(take_along take_along.comp)
mnemo_shader(mem_index mem_index.comp)
mnemo_shader(mem_index_shuffle mem_index.comp SHUFFLE=1)
