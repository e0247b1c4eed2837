// The graph builder: the engine side of mnemo_builder_api, checking every op with its shape rule
// as the plugin adds it.
#include "graph/graph.hpp"

#include <algorithm>
#include <map>

#include "mnemo/error.hpp"

namespace mnemo::detail {

GraphBuilder::GraphBuilder(int64_t n_tokens, int64_t n_outputs, ParamShape param_shape, int32_t purpose)
    : n_tokens_(n_tokens), n_outputs_(n_outputs), param_shape_(std::move(param_shape)) {
    api_.purpose = purpose;
    api_.mark_output = &api_mark_output;
    api_.builder = this;
    api_.n_tokens = n_tokens;
    api_.n_outputs = n_outputs;
    api_.input = &api_input;
    api_.param = &api_param;
    api_.op = &api_op;
    api_.reshape = &api_reshape;
    api_.set_output = &api_set_output;
    api_.last_error = &api_last_error;
}

mnemo_tid GraphBuilder::fail(const std::string& message) {
    if (error_.empty()) error_ = message;  // keep the first error: later ones are consequences
    return -1;
}

mnemo_tid GraphBuilder::api_input(void* self_, int32_t kind) {
    auto* self = static_cast<GraphBuilder*>(self_);
    if (kind < MNEMO_INPUT_TOKENS || kind >= kInputKinds)
        return self->fail("graph input kind " + std::to_string(kind) + " does not exist");
    if (self->input_nodes_[kind] >= 0) return self->input_nodes_[kind];
    GraphNode n;
    n.kind = NodeKind::Input;
    n.input_kind = kind;
    n.shape.dtype = DType::I32;
    n.shape.ndim = 1;
    n.shape.shape[0] = kind == MNEMO_INPUT_OUT_ROWS ? self->n_outputs_ : self->n_tokens_;
    self->nodes_.push_back(n);
    return self->input_nodes_[kind] = static_cast<mnemo_tid>(self->nodes_.size() - 1);
}

mnemo_tid GraphBuilder::api_param(void* self_, mnemo_tid id) {
    auto* self = static_cast<GraphBuilder*>(self_);
    const TensorShape* shape = self->param_shape_(id);
    if (!shape) return self->fail("parameter id " + std::to_string(id) + " was never declared");
    if (static_cast<size_t>(id) < self->param_nodes_.size() && self->param_nodes_[id] >= 0) return self->param_nodes_[id];
    GraphNode n;
    n.kind = NodeKind::Param;
    n.param_id = id;
    n.shape = *shape;
    self->nodes_.push_back(n);
    if (self->param_nodes_.size() <= static_cast<size_t>(id)) self->param_nodes_.resize(id + 1, -1);
    return self->param_nodes_[id] = static_cast<mnemo_tid>(self->nodes_.size() - 1);
}

mnemo_tid GraphBuilder::api_op(void* self_, int32_t op, int32_t n_inputs, const mnemo_tid* inputs, int32_t n_ip,
                               const int64_t* ip, int32_t n_fp, const float* fp) {
    auto* self = static_cast<GraphBuilder*>(self_);
    if (n_inputs < 0 || n_inputs > MNEMO_MAX_INPUTS || n_ip < 0 || n_ip > MNEMO_MAX_PARAMS || n_fp < 0 ||
        n_fp > MNEMO_MAX_PARAMS)
        return self->fail("op " + std::to_string(op) + ": too many inputs or parameters");
    GraphNode n;
    n.kind = NodeKind::Op;
    n.op = op;
    std::vector<TensorShape> shapes;
    for (int32_t i = 0; i < n_inputs; ++i) {
        if (!self->valid(inputs[i]))
            return self->fail("op " + std::to_string(op) + ": input " + std::to_string(i) + " is not a tensor of this graph");
        n.inputs.push_back(inputs[i]);
        shapes.push_back(self->nodes_[inputs[i]].shape);
    }
    std::copy(ip, ip + n_ip, n.iparams);
    std::copy(fp, fp + n_fp, n.fparams);
    try {
        n.shape = infer_output(op, shapes, std::span<const int64_t>(ip, static_cast<size_t>(n_ip)),
                               std::span<const float>(fp, static_cast<size_t>(n_fp)));
    } catch (const std::exception& e) {
        return self->fail(e.what());
    }
    if (op_info(op).output_aliases_input0 && self->nodes_[inputs[0]].kind != NodeKind::Param)
        return self->fail(std::string(op_info(op).name) + ": input 0 must be a state tensor (it is written in place)");
    self->nodes_.push_back(n);
    return static_cast<mnemo_tid>(self->nodes_.size() - 1);
}

mnemo_tid GraphBuilder::api_reshape(void* self_, mnemo_tid t, int32_t ndim, const int64_t* shape) {
    auto* self = static_cast<GraphBuilder*>(self_);
    if (!self->valid(t)) return self->fail("reshape: not a tensor of this graph");
    if (ndim < 1 || ndim > MNEMO_MAX_DIMS) return self->fail("reshape: 1..4 dimensions expected");
    GraphNode n;
    n.kind = NodeKind::View;
    n.shape.dtype = self->nodes_[t].shape.dtype;
    n.shape.ndim = ndim;
    for (int32_t i = 0; i < ndim; ++i) {
        if (shape[i] < 0) return self->fail("reshape: negative dimension");
        n.shape.shape[i] = shape[i];
    }
    if (n.shape.numel() != self->nodes_[t].shape.numel())
        return self->fail("reshape: " + self->nodes_[t].shape.str() + " cannot become " + n.shape.str() +
                          " (element counts differ)");
    // A block-quantized tensor's rows stay whole blocks (blocks are laid out along the last dimension).
    if (const int64_t block = dtype_block(n.shape.dtype).elems; n.shape.shape[ndim - 1] % block != 0)
        return self->fail("reshape: " + self->nodes_[t].shape.str() + " cannot become " + n.shape.str() + " (its rows would split " +
                          std::string(dtype_name(n.shape.dtype)) + " blocks of " + std::to_string(block) + ")");
    n.inputs = {t};
    self->nodes_.push_back(n);
    return static_cast<mnemo_tid>(self->nodes_.size() - 1);
}

mnemo_status GraphBuilder::api_set_output(void* self_, mnemo_tid t) {
    auto* self = static_cast<GraphBuilder*>(self_);
    if (!self->valid(t)) {
        self->fail("set_output: not a tensor of this graph");
        return MNEMO_ERR_INVALID;
    }
    const TensorShape& s = self->nodes_[t].shape;
    if (s.dtype != DType::F32 || s.ndim != 2 || s.shape[0] != self->n_outputs_) {
        self->fail("set_output: logits must be f32[" + std::to_string(self->n_outputs_) + ", vocab], got " + s.str());
        return MNEMO_ERR_INVALID;
    }
    self->output_ = t;
    return MNEMO_OK;
}

const char* GraphBuilder::api_last_error(void* self_) { return static_cast<GraphBuilder*>(self_)->error_.c_str(); }

mnemo_status GraphBuilder::api_mark_output(void* self_, const char* name, mnemo_tid t) {
    auto* self = static_cast<GraphBuilder*>(self_);
    if (!name || !*name) {
        self->fail("mark_output: an output needs a name");
        return MNEMO_ERR_INVALID;
    }
    if (!self->valid(t)) {
        self->fail(std::string("mark_output '") + name + "': not a tensor of this graph");
        return MNEMO_ERR_INVALID;
    }
    for (const auto& [n, id] : self->named_)
        if (n == name) {
            self->fail(std::string("mark_output: '") + name + "' is marked twice");
            return MNEMO_ERR_INVALID;
        }
    self->named_.emplace_back(name, t);
    return MNEMO_OK;
}
}  // namespace mnemo::detail
