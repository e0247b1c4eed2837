#include "model_host.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "mnemo/error.hpp"

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
    for (int32_t t = 0; t < MNEMO_DTYPE_COUNT_; ++t)
        if (mask & (1u << t)) s += (s.empty() ? "" : "/") + std::string(dtype_name(static_cast<DType>(t)));
    return s;
}

ModelHost* self_of(void* p) { return static_cast<ModelHost*>(p); }

}  // namespace

ModelHost::ModelHost(const json::Value& config, std::string config_name, const Checkpoint& checkpoint,
                     std::string plugin_name)
    : config_(config), config_name_(std::move(config_name)), checkpoint_(checkpoint), plugin_name_(std::move(plugin_name)) {
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

mnemo_status ModelHost::declare_weight(void* self_, const char* name, uint32_t dtype_mask, int32_t ndim,
                                       const int64_t* shape, mnemo_tid* out, mnemo_error* err) {
    ModelHost* self = self_of(self_);
    try {
        const TensorView* t = self->checkpoint_.find(name);
        if (!t) {
            const std::string where = self->checkpoint_.files().size() == 1 ? self->checkpoint_.files()[0] : "the checkpoint";
            throw Error(where + ": tensor '" + std::string(name) + "' is missing (the " + self->plugin_name_ +
                        " plugin needs it for this config.json)");
        }
        const std::vector<int64_t> expected(shape, shape + (ndim > 0 ? ndim : 0));
        if (t->shape != expected)
            throw Error(t->file + ": tensor '" + std::string(name) + "' has shape " + shape_text(t->shape) + ", expected " +
                        shape_text(expected) + " for this config.json");
        if (!(dtype_mask & (1u << static_cast<uint32_t>(t->dtype))))
            throw Error(t->file + ": tensor '" + std::string(name) + "' is " + std::string(dtype_name(t->dtype)) +
                        ", expected " + mask_text(dtype_mask));
        ParamDecl d;
        d.name = name;
        d.kind = ParamKind::Weight;
        d.shape = make_shape(static_cast<int32_t>(t->dtype), ndim, shape, name);
        d.weight = t;
        return self->add(std::move(d), out);
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
        d.constant.assign(bytes, bytes + d.shape.nbytes());
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
