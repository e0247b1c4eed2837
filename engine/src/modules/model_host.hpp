// The engine's side of mnemo_host_api: config.json lookups for the plugin, and the record of
// every tensor the plugin declares (checkpoint weights, computed constants, per-context state),
// each checked against the checkpoint as it is declared.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/abi/plugin_abi.h"
#include "mnemo/io/json.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/io/safetensors.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::detail {

enum class ParamKind { Weight, Constant, State };

struct ParamDecl {
    std::string name;
    ParamKind kind = ParamKind::Weight;
    TensorShape shape;
    const TensorView* weight = nullptr;  // Weight: the checkpoint tensor (mmapped); null when stacked or decoded
    // Constant: the plugin's data; stacked Weight, or a block-quantized one declared with a dtype
    // mask that does not take its type (decoded at load to a float type of the mask): the engine's copy.
    std::vector<uint8_t> owned;

    // Where the tensor's bytes are on the host (Weight and Constant).
    const void* host_data() const { return weight ? weight->data : owned.data(); }
};

class ModelHost {
public:
    ModelHost(const json::Value& config, std::string config_name, const Checkpoint& checkpoint,
              std::string plugin_name, std::string model_dir = {});

    const mnemo_host_api* api() const { return &api_; }
    const std::vector<ParamDecl>& params() const { return params_; }
    const TensorShape* param_shape(int32_t id) const {
        return id >= 0 && static_cast<size_t>(id) < params_.size() ? &params_[id].shape : nullptr;
    }

private:
    static int32_t config_has(void* self, const char* path);
    static mnemo_status config_int(void* self, const char* path, int64_t* out, mnemo_error* err);
    static mnemo_status config_float(void* self, const char* path, double* out, mnemo_error* err);
    static mnemo_status config_bool(void* self, const char* path, int32_t* out, mnemo_error* err);
    static mnemo_status config_string(void* self, const char* path, char* out, size_t cap, mnemo_error* err);
    static int32_t has_weight(void* self, const char* name);
    static mnemo_status declare_weight(void* self, const char* name, uint32_t dtype_mask, int32_t ndim,
                                       const int64_t* shape, mnemo_tid* out, mnemo_error* err);
    static mnemo_status declare_constant(void* self, const char* name, int32_t dtype, int32_t ndim,
                                         const int64_t* shape, const void* data, mnemo_tid* out, mnemo_error* err);
    static mnemo_status declare_state(void* self, const char* name, int32_t dtype, int32_t ndim,
                                      const int64_t* shape, mnemo_tid* out, mnemo_error* err);
    static mnemo_status declare_weight_stack(void* self, const char* const* names, int32_t count, uint32_t dtype_mask,
                                             int32_t ndim, const int64_t* shape, mnemo_tid* out, mnemo_error* err);
    static mnemo_status read_weight(void* self, mnemo_tid id, int32_t dtype, void* dst, int64_t count,
                                    mnemo_error* err);
    static mnemo_status tokenize(void* self, const char* text, int32_t* ids, int32_t cap, int32_t* n_ids,
                                 mnemo_error* err);
    static int32_t config_keys(void* self, const char* path, char* out, size_t cap);

    // The checkpoint tensor `name`, checked against the expected shape and dtypes; throws with
    // the file and tensor named.
    const TensorView& checked_weight(const char* name, uint32_t dtype_mask, int32_t ndim, const int64_t* shape) const;

    // The declaration of checkpoint tensor t (checked by checked_weight): in place, or widened to a
    // float type when t is block-quantized and the mask does not take its type.
    static ParamDecl declared(const std::string& name, const TensorView& t, uint32_t dtype_mask, int32_t ndim, const int64_t* shape);

    // The config value at `path`, or an error naming the field.
    const json::Value* field(const char* path, mnemo_error* err, const char* expected) const;
    mnemo_status add(ParamDecl decl, mnemo_tid* out);

    const json::Value& config_;
    std::string config_name_;
    const Checkpoint& checkpoint_;
    std::string plugin_name_;
    std::string model_dir_;
    std::unique_ptr<Tokenizer> tokenizer_;  // loaded on the first tokenize() call
    std::vector<ParamDecl> params_;
    mnemo_host_api api_{};
};

// Build a TensorShape from an ABI (ndim, shape) pair; throws on bad ranks or dimensions.
TensorShape make_shape(int32_t dtype, int32_t ndim, const int64_t* shape, const std::string& what);

void set_error(mnemo_error* err, const std::string& message);

}  // namespace mnemo::detail
