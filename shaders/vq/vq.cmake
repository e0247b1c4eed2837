# VQ_DECODE (backends/vulkan/src/kernels/vq.cpp): codes to rotated-space vectors, then x = A^T y.
mnemo_shader(vq_decode vq_decode.comp)
mnemo_shader(vq_rotate vq_rotate.comp)
