# ATTN_MASS (backends/vulkan/src/kernels/attn_mass.cpp): the softmax normaliser of every query
# row, then the mass of every key token; the head dim is a specialization constant.
mnemo_shader(attn_mass_norm attn_mass.comp NORM=1)
mnemo_shader(attn_mass_sum attn_mass.comp)
