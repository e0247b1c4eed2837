// Structural validation of a node (op, arity, dtypes, shapes, parameters) before any kernel
// touches it. The engine checks the same rules, but the module is a C ABI boundary: anything
// that reaches it must be safe to execute, so it re-checks what its kernels rely on.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mnemo/abi/mnemo_abi.h"

namespace mnemo_cpu {

// False with a reason in `message` when the node cannot run on this backend.
bool check_node(const mnemo_node& node, char* message, size_t cap);

// Size in bytes of a tensor's data; false on overflow or invalid dtype.
bool tensor_bytes(const mnemo_tensor& t, uint64_t* bytes);

const char* op_name(int32_t op);

}  // namespace mnemo_cpu
