// Sample rows -> VQ_DECODE node over host memory -> reference_compute -> bitwise comparison.
#include "decode_check.hpp"

#include <array>
#include <cstring>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"

namespace mnemo::kb {
namespace {

mnemo_tensor host_tensor(const void* data, DType dtype, std::initializer_list<int64_t> shape) {
    mnemo_tensor t{};
    t.buffer = const_cast<void*>(data);  // reference_compute reads inputs only
    t.dtype = static_cast<int32_t>(dtype);
    t.ndim = static_cast<int32_t>(shape.size());
    int i = 0;
    for (int64_t s : shape) t.shape[i++] = s;
    return t;
}

std::string float_text(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(f), bits);
    return buf;
}

}  // namespace

size_t check_vq_decode(const VqCodebook& book, const std::vector<uint8_t>& codes, const std::vector<float>& faiss_decoded,
                       size_t n, size_t max_rows, const std::string& what) {
    const size_t cs = book.code_size(), d = book.d_in;
    if (codes.size() != n * cs || faiss_decoded.size() != n * d)
        throw Error(what + ": decode check: " + std::to_string(n) + " codes of " + std::to_string(cs) + " bytes and vectors of " +
                    std::to_string(d) + " floats expected");
    const size_t rows = std::min(n, max_rows);
    if (rows == 0) return 0;
    std::vector<size_t> picked(rows);
    std::vector<uint8_t> sample(rows * cs);
    for (size_t r = 0; r < rows; ++r) {
        picked[r] = r * n / rows;  // evenly spread, first row included
        std::memcpy(sample.data() + r * cs, codes.data() + picked[r] * cs, cs);
    }
    const std::vector<int32_t> words = vq_code_words(sample.data(), rows, cs, book.code_words());

    mnemo_node node{};
    node.op = MNEMO_OP_VQ_DECODE;
    node.n_inputs = book.has_rotation() ? 4 : 3;
    const auto nr = static_cast<int64_t>(rows);
    node.inputs[0] = host_tensor(words.data(), DType::I32, {nr, static_cast<int64_t>(book.code_words())});
    node.inputs[1] = host_tensor(book.coarse.data(), DType::F32,
                                 {book.coarse_m, int64_t{1} << book.coarse_nbits, book.d_out / book.coarse_m});
    node.inputs[2] = host_tensor(book.pq.data(), DType::F32, {book.pq_m, int64_t{1} << book.pq_nbits, book.d_out / book.pq_m});
    if (book.has_rotation()) node.inputs[3] = host_tensor(book.rotation.data(), DType::F32, {book.d_out, book.d_in});
    node.iparams[0] = book.coarse_nbits;
    node.iparams[1] = book.pq_nbits;
    // The op table's shape rule first: a codebook VQ_DECODE refuses is a failure here, not later
    // on the device.
    std::vector<TensorShape> shapes;
    for (int i = 0; i < node.n_inputs; ++i) shapes.push_back(shape_of(node.inputs[i]));
    const TensorShape out_shape = infer_output(MNEMO_OP_VQ_DECODE, shapes, std::span<const int64_t>(node.iparams, 2), {});
    if (out_shape.ndim != 2 || out_shape.shape[0] != nr || out_shape.shape[1] != static_cast<int64_t>(d))
        throw Error(what + ": VQ_DECODE would produce " + out_shape.str() + ", FAISS decodes [" + std::to_string(rows) + ", " +
                    std::to_string(d) + "]");
    std::vector<float> out(rows * d);
    node.output = host_tensor(out.data(), DType::F32, {nr, static_cast<int64_t>(d)});
    reference_compute(node);

    for (size_t r = 0; r < rows; ++r)
        for (size_t i = 0; i < d; ++i) {
            const float want = faiss_decoded[picked[r] * d + i], got = out[r * d + i];
            if (std::memcmp(&want, &got, 4) != 0)
                throw Error(what + ": the engine's VQ_DECODE reference differs from FAISS's sa_decode at vector " +
                            std::to_string(picked[r]) + ", element " + std::to_string(i) + ": " + float_text(got) + " vs " +
                            float_text(want) +
                            ". Devices would decode other memories than the server measured; is libblas.so.3 the "
                            "reference BLAS (update-alternatives --display libblas.so.3-x86_64-linux-gnu)?");
        }
    return rows;
}

}  // namespace mnemo::kb
