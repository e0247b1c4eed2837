// The op table: one row per op, generated from the op list (mnemo/abi/mnemo_ops.def), so names,
// arities, families and profile categories cannot disagree with the enum.
#include <array>
#include <string_view>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"

namespace mnemo {
namespace {

// Profile categories. RoPE and the KV-cache store count as attention (they exist only for it);
// softmax counts with the norms (a row-wise reduction and rescale, like them); every op that
// serves a memory layer (product keys, top-k, gathers, bags, PEER, HIVE) is "memory-layer";
// get_rows (the embedding lookup) is "other".
constexpr const char* kCategoryMATMUL = "matmul";
constexpr const char* kCategoryATTENTION = "attention";
constexpr const char* kCategoryNORM = "norm";
constexpr const char* kCategoryELEMENTWISE = "elementwise";
constexpr const char* kCategoryMEMORY = "memory-layer";
constexpr const char* kCategoryMOE = "moe";
constexpr const char* kCategoryOTHER = "other";
constexpr std::array<const char*, 7> kCategories = {kCategoryMATMUL, kCategoryATTENTION, kCategoryNORM, kCategoryELEMENTWISE,
                                                    kCategoryMEMORY,  kCategoryMOE,       kCategoryOTHER};

constexpr std::array<OpInfo, MNEMO_OP_COUNT_> kOps = {{
    {MNEMO_OP_NONE, "none", 0, 0, false, kCategoryOTHER, ""},
#define MNEMO_OP(id, value, name, family, min_inputs, max_inputs, aliases, category) \
    {MNEMO_OP_##id, #name, min_inputs, max_inputs, aliases != 0, kCategory##category, #family},
#include "mnemo/abi/mnemo_ops.def"
#undef MNEMO_OP
}};

constexpr std::array kFamilies = {
#define MNEMO_OP_FAMILY(family) #family,
#include "mnemo/abi/mnemo_ops.def"
#undef MNEMO_OP_FAMILY
};

// The list is dense and in enum order (mnemo_op_name() and every table indexed by op rely on it),
// arities are sane, and every op names a listed family.
constexpr bool dense_and_sane() {
    for (size_t i = 0; i < kOps.size(); ++i) {
        if (kOps[i].op != static_cast<int32_t>(i)) return false;
        if (i > 0 && (kOps[i].min_inputs < 1 || kOps[i].min_inputs > kOps[i].max_inputs ||
                      kOps[i].max_inputs > MNEMO_MAX_INPUTS))
            return false;
        bool listed = i == 0;
        for (const char* f : kFamilies) listed = listed || std::string_view(f) == kOps[i].family;
        if (!listed) return false;
    }
    return true;
}
static_assert(kOps.size() == MNEMO_OP_COUNT_, "mnemo_ops.def and the mnemo_op enum disagree");
static_assert(dense_and_sane(), "mnemo_ops.def: op values must be 1, 2, 3, ... in order, arities within MNEMO_MAX_INPUTS, "
                                "and every family listed by MNEMO_OP_FAMILY");

}  // namespace

int32_t op_count() { return MNEMO_OP_COUNT_; }

std::span<const char* const> op_categories() { return kCategories; }

std::span<const char* const> op_families() { return kFamilies; }

const OpInfo& op_info(int32_t op) {
    if (op <= MNEMO_OP_NONE || op >= MNEMO_OP_COUNT_) throw Error("unknown op id " + std::to_string(op));
    return kOps[static_cast<size_t>(op)];
}

std::optional<int32_t> op_from_name(std::string_view name) {
    for (const OpInfo& o : kOps)
        if (o.op != MNEMO_OP_NONE && name == o.name) return o.op;
    return std::nullopt;
}

}  // namespace mnemo
