// What explicit memories need from the session that holds them, and nothing more: the states
// the plugin declared, graphs of the model run over rows of tokens, and a few device calls for
// the buffers and node lists the memories prepare themselves (the decoder of compressed
// memories). The session implements it (session/session_memory_host.cpp); tests can fake it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "mnemo/abi/plugin_abi.h"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo::detail {

// A state the plugin declared (id -1: it declared none of that name).
struct DeclaredState {
    int32_t id = -1;
    TensorShape shape;
};

class MemoryHost {
public:
    virtual ~MemoryHost() = default;

    // For messages: "the memory3 plugin".
    virtual std::string plugin_name() const = 0;

    // ---- the model
    virtual DeclaredState state(const std::string& name) const = 0;
    // The device buffer of a state (for writes, and as the output of prepared nodes).
    virtual void* state_buffer(int32_t id) const = 0;
    // The shape of the named output `name` of the graph of `purpose` over `rows` tokens, without
    // running it (throws when the plugin marks no such output).
    virtual TensorShape output_shape(int32_t purpose, int64_t rows, const std::string& name) = 0;
    // Run the graph of `purpose` (ENCODE or ENCODE_QUERY) over `rows` and read the named outputs
    // `wanted` back as f32 host arrays, checked to be f32.
    virtual std::map<std::string, std::vector<float>> run_outputs(int32_t purpose, const std::vector<BatchToken>& rows,
                                                                  const std::vector<std::string>& wanted) = 0;

    // ---- the device
    virtual void* alloc(uint64_t bytes, const std::string& what) = 0;
    virtual void release(void* buffer) = 0;
    virtual void write(void* buffer, uint64_t offset, const void* src, uint64_t bytes, const std::string& what) = 0;
    virtual bool supports(const mnemo_node& node) const = 0;
    // A list of nodes prepared once and run many times (released with release_nodes).
    virtual void* prepare_nodes(const std::vector<mnemo_node>& nodes, const std::string& what) = 0;
    virtual void run_nodes(void* prepared, const std::string& what) = 0;
    virtual void release_nodes(void* prepared) = 0;
    virtual std::string device_name() const = 0;
};

}  // namespace mnemo::detail
