# ATTENTION (attention.comp, attention_combine.comp; backends/vulkan/src/kernels/attention.cpp). Head sizes, workgroup size and the
# value-lane split are specialization constants; the defines pick the reduction (subgroups or
# shared memory) and whether the pass writes the output or per-chunk partials for the combine.
mnemo_shader(attention attention.comp USE_SUBGROUPS=1)
mnemo_shader(attention_shmem attention.comp)
mnemo_shader(attention_split attention.comp USE_SUBGROUPS=1 SPLIT=1)
mnemo_shader(attention_split_shmem attention.comp SPLIT=1)
mnemo_shader(attention_combine attention_combine.comp)
# The same over f16 caches (--cache-type f16).
mnemo_shader(attention_f16 attention.comp USE_SUBGROUPS=1 CACHE_F16=1)
mnemo_shader(attention_f16_shmem attention.comp CACHE_F16=1)
mnemo_shader(attention_f16_split attention.comp USE_SUBGROUPS=1 SPLIT=1 CACHE_F16=1)
mnemo_shader(attention_f16_split_shmem attention.comp SPLIT=1 CACHE_F16=1)
# And over q8_0 caches (--cache-type q8_0; shaders/quant.glsl reads the blocks).
mnemo_shader(attention_q8_0 attention.comp USE_SUBGROUPS=1 CACHE_Q8=1)
mnemo_shader(attention_q8_0_shmem attention.comp CACHE_Q8=1)
mnemo_shader(attention_q8_0_split attention.comp USE_SUBGROUPS=1 SPLIT=1 CACHE_Q8=1)
mnemo_shader(attention_q8_0_split_shmem attention.comp SPLIT=1 CACHE_Q8=1)
