# Elementwise ops: ADD, MUL, SCALE, SILU, GELU, SWIGLU, CLAMP (elementwise.comp; backends/vulkan/src/kernels/elementwise.cpp).
mnemo_shader(binary_add elementwise.comp OP_ADD=1)
mnemo_shader(binary_mul elementwise.comp OP_MUL=1)
mnemo_shader(unary_scale elementwise.comp OP_SCALE=1)
mnemo_shader(unary_silu elementwise.comp OP_SILU=1)
mnemo_shader(unary_gelu_tanh elementwise.comp OP_GELU_TANH=1)
mnemo_shader(unary_gelu_erf elementwise.comp OP_GELU_ERF=1)
mnemo_shader(binary_swiglu elementwise.comp OP_SWIGLU=1)
mnemo_shader(unary_clamp elementwise.comp OP_CLAMP=1)
