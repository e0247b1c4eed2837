// NumPy .npy output (format version 1.0) for logits dumps and golden files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include "mnemo/api.hpp"

namespace mnemo {

// Write `data` (product(shape) float32 values, C order) as a little-endian '<f4' .npy file.
// The file is written next to `path` under a temporary name and renamed into place, so a reader
// never sees a half-written file. Throws mnemo::Error naming the path on any I/O failure or on a
// negative dimension.
MNEMO_API void write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& shape);

// The .npy header (magic, version, length, dict, padding) for a float32 array of this shape.
MNEMO_API std::string npy_f32_header(const std::vector<int64_t>& shape);

}  // namespace mnemo
