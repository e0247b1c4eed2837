// What profiles and model summaries count per op: floating-point operations, and which input
// selects the rows a gathering op reads (the parameters a decode step activates).
#include "mnemo/ops/op_table.hpp"

namespace mnemo {

namespace {
double numel_of(const mnemo_tensor& t) {
    double v = 1;
    for (int32_t i = 0; i < t.ndim; ++i) v *= static_cast<double>(t.shape[i]);
    return v;
}
}  // namespace

int gathering_input(int32_t op, size_t k) {
    switch (op) {
        case MNEMO_OP_GET_ROWS:
        case MNEMO_OP_EMBEDDING_BAG:
        case MNEMO_OP_PEER_GATE:
        case MNEMO_OP_HIVE: return k == 0 ? 1 : -1;
        case MNEMO_OP_MOE_FFN: return k >= 3 ? 1 : -1;  // the k chosen experts of each token
        default: return -1;
    }
}

double node_flops(const mnemo_node& n) {
    const TensorShape out = shape_of(n.output);
    switch (n.op) {
        case MNEMO_OP_MATMUL:
            return 2.0 * static_cast<double>(out.numel()) * static_cast<double>(n.inputs[1].shape[1]);
        case MNEMO_OP_ATTENTION: {
            // Causal: on average about half the context; count the keys actually read is data
            // dependent, so report the upper bound over the cache length.
            // A prefix (inputs 5..) adds its M slots to every query's keys.
            const double heads = static_cast<double>(n.inputs[0].shape[0] * n.inputs[0].shape[1]);
            const double keys = static_cast<double>(n.inputs[1].shape[2]) +
                                (n.n_inputs >= 8 ? static_cast<double>(n.inputs[5].shape[2]) : 0.0);
            return heads * 2.0 * keys * static_cast<double>(n.inputs[0].shape[2] + n.inputs[2].shape[3]);
        }
        case MNEMO_OP_ATTN_MASS: {
            // A D-long score per (query token, head, key token) of one sequence; which tokens
            // share a sequence is data, so report the bound where all N do.
            const double rows = static_cast<double>(n.inputs[0].shape[0]);
            return rows * rows * static_cast<double>(n.inputs[0].shape[1]) * 2.0 * static_cast<double>(n.inputs[0].shape[2]);
        }
        case MNEMO_OP_EMBEDDING_BAG:  // a multiply-add per bag entry and column
            return 2.0 * static_cast<double>(n.inputs[1].shape[0]) * static_cast<double>(n.inputs[1].shape[1]) *
                   static_cast<double>(n.inputs[0].shape[1]);
        case MNEMO_OP_PK_SCORE:  // every sub-key of every rank against its query
            return 2.0 * static_cast<double>(out.numel()) * static_cast<double>(n.inputs[1].shape[2]);
        case MNEMO_OP_PK_TOPK: {  // m*m candidate pairs per (token, head), each an Rk x Rk form per core
            const double rank = static_cast<double>(n.inputs[0].shape[3]);
            const double cores = n.n_inputs > 3 ? n.n_inputs - 3 : 0;
            const double m = static_cast<double>(n.iparams[0]);
            const double pairs = static_cast<double>(n.inputs[0].shape[0] * n.inputs[0].shape[1] / 2) * m * m;
            return numel_of(n.inputs[0]) + pairs * (cores > 0 ? 2.0 * cores * rank * (rank + 1) : 1.0);
        }
        case MNEMO_OP_PK_PAIR_SCORES: {
            const double rank = static_cast<double>(n.inputs[0].shape[3]);
            return static_cast<double>(out.numel()) * 2.0 * rank * (rank + 1);
        }
        case MNEMO_OP_PEER_GATE:  // a dot product per entry
            return 2.0 * numel_of(n.inputs[1]) * static_cast<double>(n.inputs[0].shape[1]);
        case MNEMO_OP_HIVE: {  // the latent bag, then one r x Dh projection per (token, head)
            const double r = static_cast<double>(n.inputs[0].shape[1]);
            return 2.0 * numel_of(n.inputs[1]) * r +
                   2.0 * static_cast<double>(out.numel()) * r;
        }
        case MNEMO_OP_MOE_FFN:  // three matrix-vector products per chosen expert
            return 6.0 * numel_of(n.inputs[1]) * static_cast<double>(n.inputs[3].shape[1]) *
                   static_cast<double>(n.inputs[3].shape[2]);
        case MNEMO_OP_VQ_DECODE: {  // an addition per rotated element, then A^T y: Do multiply-adds per output
            const double d_out = static_cast<double>(n.inputs[1].shape[0]) * static_cast<double>(n.inputs[1].shape[2]);
            const double rotated = static_cast<double>(n.inputs[0].shape[0]) * d_out;
            return n.n_inputs > 3 ? rotated + 2.0 * static_cast<double>(out.numel()) * d_out : rotated;
        }
        default:
            return static_cast<double>(out.numel());
    }
}

}  // namespace mnemo
