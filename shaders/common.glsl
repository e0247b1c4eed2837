// Shared declarations of every Mnemo compute shader (included after #version).
//
// Tensors are reached through device addresses (GL_EXT_buffer_reference) passed in push
// constants as uvec2 (low word first). f32 and i32 tensors are arrays of 4-byte words; 16-bit
// weights (f16, bf16) are read as 32-bit words and unpacked, so no 16-bit storage feature is
// needed, and accumulation is always f32.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_EXT_control_flow_attributes : enable

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };
// Only for addresses known to be 16-byte aligned.
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Vec4s { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer UVec4s { uvec4 v[]; };

// The status word of the context (backends/vulkan/src/context.hpp, KernelStatus).
layout(set = 0, binding = 0, std430) buffer MnemoStatus {
    uint code;
    uint node;
    int value;
    int limit;
} mnemo_status;

// A kernel that meets an index outside 0..limit-1 reports it here (first report wins), skips the
// bad entry, and the host turns the report into an error naming the node.
void report_bad_index(uint node, int value, int limit) {
    if (atomicCompSwap(mnemo_status.code, 0u, 1u) == 0u) {
        mnemo_status.node = node;
        mnemo_status.value = value;
        mnemo_status.limit = limit;
    }
}

#define DTYPE_F32 0u
#define DTYPE_F16 1u
#define DTYPE_BF16 2u

// A weight operand (WeightArg in kernel_api.hpp): address rounded down to 4 bytes, dtype, and
// the element index of the first element inside the first word (0 or 1 for 16-bit types).
struct Weight {
    uvec2 addr;
    uint dtype;
    uint first;
};

float bf16_bits_to_f32(uint bits) { return uintBitsToFloat(bits << 16); }

// Half-precision bits to f32. Every shader reads f16 through these two functions, never through
// unpackHalf2x16 directly: lavapipe on AArch64 (Mesa 22.3's llvmpipe with LLVM 15) aborts
// compiling that built-in ("Cannot select: v4f32 = truncate") or, when only one half is used,
// returns the word's bits unconverted (docs/edge.md). The backend sets this constant on such a
// device (DeviceFeatures::half_by_integer_ops) and the conversion becomes integer arithmetic;
// every other device keeps the built-in (one instruction on GPUs, F16C on x86 lavapipe). Being a
// specialization constant, the unused branch is folded away before the driver's compiler sees it.
layout(constant_id = 100) const bool HALF_BY_INTEGER_OPS = false;

// Exact for every pattern, on devices that flush f32 denormals too (no denormal intermediate):
// normals rebias the exponent (127 - 15 = 112, i.e. + 0x38000000 once shifted into place),
// subnormals are their 10-bit mantissa times 2^-24, inf/NaN keep the mantissa (and so the NaN
// payload and quiet bit) under an all-ones exponent; the sign bit is copied last.
float half_bits_to_f32_by_integer_ops(uint h) {
    const uint e = h & 0x7C00u;
    const uint m = h & 0x03FFu;
    const float mag = e == 0u        ? float(m) * uintBitsToFloat(0x33800000u)  // 2^-24
                    : e == 0x7C00u   ? uintBitsToFloat(0x7F800000u | (m << 13))
                                     : uintBitsToFloat(((h & 0x7FFFu) << 13) + 0x38000000u);
    return uintBitsToFloat(floatBitsToUint(mag) | ((h & 0x8000u) << 16));
}

// The low 16 bits of `bits` (the high ones are ignored) as f32.
float half_to_f32(uint bits) {
    if (HALF_BY_INTEGER_OPS) return half_bits_to_f32_by_integer_ops(bits & 0xFFFFu);
    return unpackHalf2x16(bits).x;
}

// Both halves of a word: .x the low 16 bits, .y the high ones (unpackHalf2x16's order).
vec2 unpack_half2(uint word) {
    if (HALF_BY_INTEGER_OPS)
        return vec2(half_bits_to_f32_by_integer_ops(word & 0xFFFFu), half_bits_to_f32_by_integer_ops(word >> 16));
    return unpackHalf2x16(word);
}

// Element i of a weight as f32.
float weight_at(Weight w, uint i) {
    if (w.dtype == DTYPE_F32) return Floats(w.addr).v[i];
    const uint j = w.first + i;
    const uint word = Words(w.addr).v[j >> 1];
    const uint bits = (j & 1u) != 0u ? (word >> 16) : (word & 0xFFFFu);
    return w.dtype == DTYPE_F16 ? half_to_f32(bits) : bf16_bits_to_f32(bits);
}

// Two consecutive elements 2p, 2p+1 of a 16-bit weight whose `first` is 0 (one word load).
vec2 weight_pair16(Weight w, uint p) {
    const uint word = Words(w.addr).v[p];
    return w.dtype == DTYPE_F16 ? unpack_half2(word)
                                : vec2(bf16_bits_to_f32(word & 0xFFFFu), bf16_bits_to_f32(word >> 16));
}
