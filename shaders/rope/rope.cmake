# ROPE (backends/vulkan/src/kernels/rope.cpp): one invocation per rotated pair.
mnemo_shader(rope rope.comp)
