// The GGUF tensor types and their block sizes (ggml's docs/gguf.md and ggml-common.h). Sizes are
// the packed structs' sizes: e.g. Q4_K is f16 d + f16 dmin + 12 bytes of 6-bit scales and mins +
// 128 bytes of nibbles for 256 weights = 144 bytes.
#include "mnemo/io/ggml_type.hpp"

#include <array>

namespace mnemo {
namespace {

constexpr uint32_t kQK = 32;    // QK4_0 = QK8_0 = 32
constexpr uint32_t kQK_K = 256; // the K-quants' super-block

// Types Mnemo reads: the float types, I32, and the quantized types of docs/gguf.md.
constexpr std::array kTypes = {
    GgmlTypeInfo{0, "F32", 1, 4, true},
    GgmlTypeInfo{1, "F16", 1, 2, true},
    GgmlTypeInfo{2, "Q4_0", kQK, 2 + kQK / 2, true},
    GgmlTypeInfo{3, "Q4_1", kQK, 2 + 2 + kQK / 2, false},
    GgmlTypeInfo{6, "Q5_0", kQK, 2 + 4 + kQK / 2, false},
    GgmlTypeInfo{7, "Q5_1", kQK, 2 + 2 + 4 + kQK / 2, false},
    GgmlTypeInfo{8, "Q8_0", kQK, 2 + kQK, true},
    GgmlTypeInfo{9, "Q8_1", kQK, 2 + 2 + kQK, false},
    GgmlTypeInfo{10, "Q2_K", kQK_K, kQK_K / 16 + kQK_K / 4 + 2 + 2, false},
    GgmlTypeInfo{11, "Q3_K", kQK_K, kQK_K / 8 + kQK_K / 4 + 12 + 2, false},
    GgmlTypeInfo{12, "Q4_K", kQK_K, 2 + 2 + 12 + kQK_K / 2, true},
    GgmlTypeInfo{13, "Q5_K", kQK_K, 2 + 2 + 12 + kQK_K / 8 + kQK_K / 2, true},
    GgmlTypeInfo{14, "Q6_K", kQK_K, kQK_K / 2 + kQK_K / 4 + kQK_K / 16 + 2, true},
    GgmlTypeInfo{15, "Q8_K", kQK_K, 4 + kQK_K + 2 * kQK_K / 16, false},
    GgmlTypeInfo{16, "IQ2_XXS", kQK_K, 2 + kQK_K / 4, false},
    GgmlTypeInfo{17, "IQ2_XS", kQK_K, 2 + kQK_K / 4 + kQK_K / 32, false},
    GgmlTypeInfo{18, "IQ3_XXS", kQK_K, 2 + 3 * kQK_K / 8, false},
    GgmlTypeInfo{19, "IQ1_S", kQK_K, 2 + kQK_K / 8 + kQK_K / 16, false},
    GgmlTypeInfo{20, "IQ4_NL", kQK, 2 + kQK / 2, false},
    GgmlTypeInfo{21, "IQ3_S", kQK_K, 2 + kQK_K / 4 + kQK_K / 32 + kQK_K / 8 + kQK_K / 64, false},
    GgmlTypeInfo{22, "IQ2_S", kQK_K, 2 + kQK_K / 4 + kQK_K / 32 + kQK_K / 32, false},
    GgmlTypeInfo{23, "IQ4_XS", kQK_K, 2 + 2 + kQK_K / 64 + kQK_K / 2, false},
    GgmlTypeInfo{24, "I8", 1, 1, false},
    GgmlTypeInfo{25, "I16", 1, 2, false},
    GgmlTypeInfo{26, "I32", 1, 4, true},
    GgmlTypeInfo{27, "I64", 1, 8, false},
    GgmlTypeInfo{28, "F64", 1, 8, false},
    GgmlTypeInfo{29, "IQ1_M", kQK_K, kQK_K / 8 + kQK_K / 16 + kQK_K / 32, false},
    GgmlTypeInfo{30, "BF16", 1, 2, true},
    GgmlTypeInfo{34, "TQ1_0", kQK_K, (kQK_K - 4 * kQK_K / 64) / 5 + kQK_K / 64 + 2, false},
    GgmlTypeInfo{35, "TQ2_0", kQK_K, kQK_K / 4 + 2, false},
    GgmlTypeInfo{39, "MXFP4", kQK, 1 + kQK / 2, false},
};

static_assert(kTypes[2].block_bytes == 18 && kTypes[6].block_bytes == 34, "Q4_0 / Q8_0 block sizes");
static_assert(kTypes[10].block_bytes == 144 && kTypes[11].block_bytes == 176 && kTypes[12].block_bytes == 210,
              "Q4_K / Q5_K / Q6_K block sizes");

// Mnemo's dtypes (mnemo/ops/dtype.hpp) describe the same blocks as the ggml types they map to.
constexpr bool dtype_blocks_agree() {
    for (const GgmlTypeInfo& t : kTypes) {
        const std::optional<DType> d = dtype_of_ggml_type(t.id);
        if (!d) continue;
        const DTypeBlock b = dtype_block(*d);
        if (b.elems != t.block_elems || b.bytes != t.block_bytes || ggml_type_of_dtype(*d) != t.id || !t.computes) return false;
    }
    return true;
}
static_assert(dtype_blocks_agree(), "dtype_block and the ggml type table disagree");

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t id) {
    for (const GgmlTypeInfo& t : kTypes)
        if (t.id == id) return &t;
    return nullptr;
}

std::string ggml_type_label(uint32_t id) {
    const GgmlTypeInfo* t = ggml_type_info(id);
    return t ? std::string(t->name) + " (" + std::to_string(id) + ")" : "unknown type " + std::to_string(id);
}

}  // namespace mnemo
