// SPIR-V of every shader variant, compiled by glslc at build time from shaders/ and embedded by
// tools/embed_spirv.cpp (the generated embedded_shaders.cpp defines the table).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace mnemo_vk {

struct EmbeddedShader {
    const char* name;  // variant name as declared in shaders/*.cmake
    const uint32_t* words;
    size_t word_count;
};

extern const EmbeddedShader kEmbeddedShaders[];
extern const size_t kEmbeddedShaderCount;

// nullptr when no variant has that name.
const EmbeddedShader* find_shader(const std::string& name);

}  // namespace mnemo_vk
