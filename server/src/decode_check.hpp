// The device decodes compressed memories with the VQ_DECODE op; its reference (engine/src/
// ops/reference_vq.cpp) is written to equal FAISS's sa_decode bit for bit. A memory folder is only
// published after that has been checked on a sample of the very codes it holds: should a BLAS
// other than the reference one be behind FAISS (its summation order differs), the decoded
// memories would differ between server and device, and that must stop the compression.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mnemo/memory/vq_codebook.hpp"

namespace mnemo::kb {

// `codes` holds n rows of book.code_size() bytes and `faiss_decoded` their FAISS sa_decode
// (n rows of book.d_in floats). At most `max_rows` rows, spread evenly over the n, are decoded
// with mnemo::reference_compute of a VQ_DECODE node and compared bit for bit. Returns the rows
// checked; throws mnemo::Error naming `what`, the row, the element and both values otherwise.
size_t check_vq_decode(const VqCodebook& book, const std::vector<uint8_t>& codes, const std::vector<float>& faiss_decoded,
                       size_t n, size_t max_rows, const std::string& what);

}  // namespace mnemo::kb
