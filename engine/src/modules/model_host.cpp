#include "modules/model_host.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <optional>

#include "mnemo/error.hpp"
#include "mnemo/io/ggml_type.hpp"
#include "mnemo/quant/ggml_quants.hpp"

namespace mnemo::detail {

void set_error(mnemo_error* err, const std::string& message) {
    if (err) std::snprintf(err->message, sizeof err->message, "%s", message.c_str());
}

TensorShape make_shape(int32_t dtype, int32_t ndim, const int64_t* shape, const std::string& what) {
    if (!dtype_valid(dtype)) throw Error(what + ": unknown dtype " + std::to_string(dtype));
    if (ndim < 1 || ndim > MNEMO_MAX_DIMS) throw Error(what + ": 1..4 dimensions expected, got " + std::to_string(ndim));
    TensorShape s;
    s.dtype = static_cast<DType>(dtype);
    s.ndim = ndim;
    for (int32_t i = 0; i < ndim; ++i) {
        if (shape[i] < 0) throw Error(what + ": negative dimension");
        s.shape[i] = shape[i];
    }
    const int64_t block = dtype_block(s.dtype).elems;
    if (s.shape[ndim - 1] % block != 0)
        throw Error(what + ": " + s.str() + " is not a whole number of " + std::string(dtype_name(s.dtype)) + " blocks of " +
                    std::to_string(block) + " along its last dimension");
    return s;
}

namespace {

std::string shape_text(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

std::string mask_text(uint32_t mask) {
    std::string s;
    for (int32_t t = 0; t < 32; ++t)
        if (dtype_valid(t) && (mask & (1u << t))) s += (s.empty() ? "" : "/") + std::string(dtype_name(static_cast<DType>(t)));
    return s;
}

bool in_mask(uint32_t mask, DType t) { return (mask & (1u << static_cast<uint32_t>(t))) != 0; }

// The float type a block-quantized weight is widened to when the plugin's mask does not take its
// type (a norm gain, a bias, a weight of an op without quantized kernels): f32 when the mask
// allows it, else f16, else bf16; nullopt when it takes no float type.
std::optional<DType> widened_dtype(uint32_t mask) {
    for (DType t : {DType::F32, DType::F16, DType::BF16})
        if (in_mask(mask, t)) return t;
    return std::nullopt;
}

// The weights of a block-quantized tensor decoded (reference dequantizer) into `to`.
std::vector<uint8_t> dequantized(const TensorView& t, DType to) {
    const int64_t inner = t.shape.empty() ? 1 : t.shape.back();
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < t.shape.size(); ++i) rows *= t.shape[i];
    std::vector<uint8_t> out(dtype_bytes(to, rows * inner));
    std::vector<float> row(static_cast<size_t>(inner));
    const uint64_t row_bytes = dtype_bytes(t.dtype, inner);
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(ggml_type_of_dtype(t.dtype), static_cast<const uint8_t*>(t.data) + static_cast<uint64_t>(r) * row_bytes,
                       row.data(), inner);
        uint8_t* dst = out.data() + static_cast<uint64_t>(r) * dtype_bytes(to, inner);
        if (to == DType::F32) {
            std::memcpy(dst, row.data(), row.size() * sizeof(float));
            continue;
        }
        for (int64_t j = 0; j < inner; ++j) {
            const uint16_t h = to == DType::F16 ? f32_to_f16(row[static_cast<size_t>(j)]) : f32_to_bf16(row[static_cast<size_t>(j)]);
            std::memcpy(dst + 2 * j, &h, 2);
        }
    }
    return out;
}

ModelHost* self_of(void* p) { return static_cast<ModelHost*>(p); }

}  // namespace

ModelHost::ModelHost(const json::Value& config, std::string config_name, const Checkpoint& checkpoint,
                     std::string plugin_name, std::string model_dir)
    : config_(config),
      config_name_(std::move(config_name)),
      checkpoint_(checkpoint),
      plugin_name_(std::move(plugin_name)),
      model_dir_(std::move(model_dir)) {
    api_.host = this;
    api_.config_has = &config_has;
    api_.config_int = &config_int;
    api_.config_float = &config_float;
    api_.config_bool = &config_bool;
    api_.config_string = &config_string;
    api_.has_weight = &has_weight;
    api_.declare_weight = &declare_weight;
    api_.declare_constant = &declare_constant;
    api_.declare_state = &declare_state;
    api_.declare_weight_stack = &declare_weight_stack;
    api_.read_weight = &read_weight;
    api_.tokenize = &tokenize;
    api_.config_keys = &config_keys;
}

int32_t ModelHost::config_keys(void* self_, const char* path, char* out, size_t cap) {
    const ModelHost* self = self_of(self_);
    const json::Value* v = (!path || !*path) ? &self->config_ : self->config_.find_path(path);
    if (!v || !v->is_object()) return -1;
    std::string all;
    for (const auto& [key, value] : v->as_object()) all += key + "\n";
    if (out && cap > 0) {
        const size_t n = std::min(all.size(), cap - 1);
        std::memcpy(out, all.data(), n);
        out[n] = 0;
    }
    return static_cast<int32_t>(v->as_object().size());
}

mnemo_status ModelHost::tokenize(void* self_, const char* text, int32_t* ids, int32_t cap, int32_t* n_ids, mnemo_error* err) {
    ModelHost* self = self_of(self_);
    try {
        if (!text || !n_ids || cap < 0 || (cap > 0 && !ids)) throw Error("tokenize: bad arguments");
        if (!self->tokenizer_) {
            if (self->model_dir_.empty()) throw Error("this model was opened without a folder, so it has no tokenizer");
            self->tokenizer_ = load_tokenizer(self->model_dir_);
        }
        const std::vector<int32_t> got = self->tokenizer_->encode(text, /*parse_special=*/true);
        *n_ids = static_cast<int32_t>(got.size());
        std::copy_n(got.begin(), std::min<size_t>(got.size(), static_cast<size_t>(cap)), ids);
        return MNEMO_OK;
    } catch (const std::exception& e) {
        set_error(err, std::string("cannot tokenize \"") + (text ? text : "") + "\": " + e.what());
        return MNEMO_ERR_INVALID;
    }
}

const json::Value* ModelHost::field(const char* path, mnemo_error* err, const char* expected) const {
    const json::Value* v = config_.find_path(path);
    if (!v || v->is_null()) {
        set_error(err, config_name_ + ": field '" + path + "' is missing (expected " + expected + ")");
        return nullptr;
    }
    return v;
}

int32_t ModelHost::config_has(void* self, const char* path) {
    const json::Value* v = self_of(self)->config_.find_path(path);
    return v && !v->is_null() ? 1 : 0;
}

mnemo_status ModelHost::config_int(void* self_, const char* path, int64_t* out, mnemo_error* err) {
    ModelHost* self = self_of(self_);
    const json::Value* v = self->field(path, err, "an integer");
    if (!v) return MNEMO_ERR_INVALID;
    // Some exporters write integral values as 4096.0; accept those, reject real fractions.
    if (v->is_integer() || (v->is_number() && std::floor(v->as_double()) == v->as_double() &&
                            std::fabs(v->as_double()) < 9.0e15)) {
        *out = v->is_integer() ? v->as_int() : static_cast<int64_t>(v->as_double());
        return MNEMO_OK;
    }
    set_error(err, self->config_name_ + ": field '" + path + "': expected an integer, found " +
                       (v->is_number() ? v->dump() : std::string(json::type_name(v->type()))));
    return MNEMO_ERR_INVALID;
}

mnemo_status ModelHost::config_float(void* self_, const char* path, double* out, mnemo_error* err) {
    ModelHost* self = self_of(self_);
    const json::Value* v = self->field(path, err, "a number");
    if (!v) return MNEMO_ERR_INVALID;
    if (!v->is_number()) {
        set_error(err, self->config_name_ + ": field '" + path + "': expected a number, found " + json::type_name(v->type()));
        return MNEMO_ERR_INVALID;
    }
    *out = v->as_double();
    return MNEMO_OK;
}

mnemo_status ModelHost::config_bool(void* self_, const char* path, int32_t* out, mnemo_error* err) {
    ModelHost* self = self_of(self_);
    const json::Value* v = self->field(path, err, "true or false");
    if (!v) return MNEMO_ERR_INVALID;
    if (!v->is_bool()) {
        set_error(err, self->config_name_ + ": field '" + path + "': expected true or false, found " + json::type_name(v->type()));
        return MNEMO_ERR_INVALID;
    }
    *out = v->as_bool() ? 1 : 0;
    return MNEMO_OK;
}

mnemo_status ModelHost::config_string(void* self_, const char* path, char* out, size_t cap, mnemo_error* err) {
    ModelHost* self = self_of(self_);
    const json::Value* v = self->field(path, err, "a string");
    if (!v) return MNEMO_ERR_INVALID;
    if (!v->is_string()) {
        set_error(err, self->config_name_ + ": field '" + path + "': expected a string, found " + json::type_name(v->type()));
        return MNEMO_ERR_INVALID;
    }
    if (cap == 0) return MNEMO_ERR_INVALID;
    std::snprintf(out, cap, "%s", v->as_string().c_str());
    return MNEMO_OK;
}

int32_t ModelHost::has_weight(void* self, const char* name) {
    return self_of(self)->checkpoint_.find(name) ? 1 : 0;
}

mnemo_status ModelHost::add(ParamDecl decl, mnemo_tid* out) {
    for (const ParamDecl& p : params_)
        if (p.name == decl.name) throw Error("'" + decl.name + "' is declared twice by the " + plugin_name_ + " plugin");
    params_.push_back(std::move(decl));
    *out = static_cast<mnemo_tid>(params_.size() - 1);
    return MNEMO_OK;
}

const TensorView& ModelHost::checked_weight(const char* name, uint32_t dtype_mask, int32_t ndim,
                                            const int64_t* shape) const {
    const TensorView* t = checkpoint_.find(name);
    if (!t) {
        const std::string where = checkpoint_.files().size() == 1 ? checkpoint_.files()[0] : "the checkpoint";
        throw Error(where + ": tensor '" + std::string(name) + "' is missing (the " + plugin_name_ +
                    " plugin needs it for this config.json)");
    }
    const std::vector<int64_t> expected(shape, shape + (ndim > 0 ? ndim : 0));
    if (t->shape != expected)
        throw Error(t->file + ": tensor '" + std::string(name) + "' has shape " + shape_text(t->shape) + ", expected " +
                    shape_text(expected) + " for this config.json");
    // A block-quantized tensor is also accepted where the plugin takes a float type: it is
    // widened at load (ModelHost::declared).
    if (!in_mask(dtype_mask, t->dtype) && !(dtype_is_quantized(t->dtype) && widened_dtype(dtype_mask)))
        throw Error(t->file + ": tensor '" + std::string(name) + "' is " + std::string(dtype_name(t->dtype)) +
                    ", expected " + mask_text(dtype_mask));
    return *t;
}

ParamDecl ModelHost::declared(const std::string& name, const TensorView& t, uint32_t dtype_mask, int32_t ndim, const int64_t* shape) {
    ParamDecl d;
    d.name = name;
    d.kind = ParamKind::Weight;
    if (dtype_is_quantized(t.dtype) && !in_mask(dtype_mask, t.dtype)) {
        const DType to = *widened_dtype(dtype_mask);
        d.shape = make_shape(static_cast<int32_t>(to), ndim, shape, name);
        d.owned = dequantized(t, to);
    } else {
        d.shape = make_shape(static_cast<int32_t>(t.dtype), ndim, shape, name);
        d.weight = &t;
    }
    return d;
}

mnemo_status ModelHost::declare_weight(void* self_, const char* name, uint32_t dtype_mask, int32_t ndim,
                                       const int64_t* shape, mnemo_tid* out, mnemo_error* err) {
    ModelHost* self = self_of(self_);
    try {
        const TensorView& t = self->checked_weight(name, dtype_mask, ndim, shape);
        return self->add(declared(name, t, dtype_mask, ndim, shape), out);
    } catch (const std::exception& e) {
        set_error(err, e.what());
        return MNEMO_ERR_INVALID;
    }
}

mnemo_status ModelHost::declare_weight_stack(void* self_, const char* const* names, int32_t count,
                                             uint32_t dtype_mask, int32_t ndim, const int64_t* shape, mnemo_tid* out,
                                             mnemo_error* err) {
    ModelHost* self = self_of(self_);
    try {
        if (count < 1) throw Error("a weight stack needs at least one tensor");
        if (ndim < 1 || ndim + 1 > MNEMO_MAX_DIMS)
            throw Error(std::string("weight stack '") + names[0] + "': each part needs 1.." +
                        std::to_string(MNEMO_MAX_DIMS - 1) + " dimensions");
        std::vector<const TensorView*> parts;
        for (int32_t i = 0; i < count; ++i) {
            const TensorView& t = self->checked_weight(names[i], dtype_mask, ndim, shape);
            if (!parts.empty() && t.dtype != parts[0]->dtype)
                throw Error(t.file + ": tensor '" + std::string(names[i]) + "' is " + std::string(dtype_name(t.dtype)) +
                            ", but '" + names[0] + "' in the same stack is " + std::string(dtype_name(parts[0]->dtype)));
            parts.push_back(&t);
        }
        std::vector<int64_t> stacked{count};
        stacked.insert(stacked.end(), shape, shape + ndim);
        ParamDecl d;
        d.name = std::string(names[0]) + (count > 1 ? " (+" + std::to_string(count - 1) + " stacked)" : "");
        d.kind = ParamKind::Weight;
        // Parts of a quantized type the mask does not take are widened, like a single weight.
        const bool widen = dtype_is_quantized(parts[0]->dtype) && !in_mask(dtype_mask, parts[0]->dtype);
        const DType dtype = widen ? *widened_dtype(dtype_mask) : parts[0]->dtype;
        d.shape = make_shape(static_cast<int32_t>(dtype), ndim + 1, stacked.data(), d.name);
        const uint64_t part_bytes = d.shape.nbytes() / static_cast<uint64_t>(count);
        d.owned.resize(d.shape.nbytes());
        for (int32_t i = 0; i < count; ++i) {
            uint8_t* dst = d.owned.data() + part_bytes * static_cast<uint64_t>(i);
            if (widen) {
                const std::vector<uint8_t> part = dequantized(*parts[static_cast<size_t>(i)], dtype);
                std::memcpy(dst, part.data(), part_bytes);
            } else {
                std::memcpy(dst, parts[static_cast<size_t>(i)]->data, part_bytes);
            }
        }
        return self->add(std::move(d), out);
    } catch (const std::exception& e) {
        set_error(err, e.what());
        return MNEMO_ERR_INVALID;
    }
}

mnemo_status ModelHost::read_weight(void* self_, mnemo_tid id, int32_t dtype, void* dst, int64_t count,
                                    mnemo_error* err) {
    ModelHost* self = self_of(self_);
    try {
        if (id < 0 || static_cast<size_t>(id) >= self->params_.size())
            throw Error("read_weight: unknown tensor id " + std::to_string(id));
        const ParamDecl& p = self->params_[static_cast<size_t>(id)];
        if (p.kind == ParamKind::State) throw Error("read_weight: '" + p.name + "' is per-context state, not a weight");
        if (count != p.shape.numel())
            throw Error("read_weight: '" + p.name + "' holds " + std::to_string(p.shape.numel()) + " elements, " +
                        std::to_string(count) + " requested");
        const auto* src = static_cast<const uint8_t*>(p.host_data());
        const DType from = p.shape.dtype;
        if (dtype == MNEMO_DTYPE_I32) {
            if (from != DType::I32)
                throw Error("read_weight: '" + p.name + "' is " + std::string(dtype_name(from)) + ", not i32");
            std::memcpy(dst, src, static_cast<size_t>(count) * 4);
        } else if (dtype == MNEMO_DTYPE_F32) {
            if (from == DType::I32) throw Error("read_weight: '" + p.name + "' is i32, not a float tensor");
            auto* out = static_cast<float*>(dst);
            if (dtype_is_quantized(from)) {  // whole rows of blocks, through the reference dequantizer
                const int64_t inner = p.shape.shape[p.shape.ndim - 1];
                const int64_t rows = inner > 0 ? count / inner : 0;
                for (int64_t r = 0; r < rows; ++r)
                    dequantize_row(ggml_type_of_dtype(from), src + static_cast<uint64_t>(r) * dtype_bytes(from, inner), out + r * inner, inner);
            } else {
                for (int64_t i = 0; i < count; ++i) out[i] = load_as_f32(src, from, static_cast<size_t>(i));
            }
        } else {
            throw Error("read_weight: can only convert to f32 or i32");
        }
        return MNEMO_OK;
    } catch (const std::exception& e) {
        set_error(err, e.what());
        return MNEMO_ERR_INVALID;
    }
}

mnemo_status ModelHost::declare_constant(void* self_, const char* name, int32_t dtype, int32_t ndim,
                                         const int64_t* shape, const void* data, mnemo_tid* out, mnemo_error* err) {
    ModelHost* self = self_of(self_);
    try {
        ParamDecl d;
        d.name = name;
        d.kind = ParamKind::Constant;
        d.shape = make_shape(dtype, ndim, shape, std::string("constant '") + name + "'");
        const auto* bytes = static_cast<const uint8_t*>(data);
        d.owned.assign(bytes, bytes + d.shape.nbytes());
        return self->add(std::move(d), out);
    } catch (const std::exception& e) {
        set_error(err, e.what());
        return MNEMO_ERR_INVALID;
    }
}

mnemo_status ModelHost::declare_state(void* self_, const char* name, int32_t dtype, int32_t ndim,
                                      const int64_t* shape, mnemo_tid* out, mnemo_error* err) {
    ModelHost* self = self_of(self_);
    try {
        ParamDecl d;
        d.name = name;
        d.kind = ParamKind::State;
        d.shape = make_shape(dtype, ndim, shape, std::string("state '") + name + "'");
        return self->add(std::move(d), out);
    } catch (const std::exception& e) {
        set_error(err, e.what());
        return MNEMO_ERR_INVALID;
    }
}

}  // namespace mnemo::detail
