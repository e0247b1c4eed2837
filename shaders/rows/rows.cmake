# GET_ROWS (rows.comp) and KV_STORE (kv_store.comp); backends/vulkan/src/kernels/rows.cpp.
mnemo_shader(get_rows rows.comp)
mnemo_shader(get_rows_f32x4 rows.comp VEC4_F32=1)
mnemo_shader(get_rows_w16x8 rows.comp VEC8_W16=1)
mnemo_shader(kv_store kv_store.comp)
mnemo_shader(kv_store_vec4 kv_store.comp VEC4=1)
mnemo_shader(kv_store_f16 kv_store.comp CACHE_F16=1)
mnemo_shader(kv_store_f16_odd kv_store.comp CACHE_F16_ODD=1)
