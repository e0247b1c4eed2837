// The conformance harness shared by the GoogleTest suite (tests/test_backend_ops.cpp) and the
// command-line tool (mnemo-test-ops, tests/conformance/test_ops_main.cpp): runs one case of
// op_cases*.hpp on one backend device and compares it with the naive reference implementation.
//
// Each tensor lives in its own backend buffer between two guard regions filled with a sentinel;
// after the run every guard byte and every input byte must be unchanged (an out-of-bounds write
// or a kernel scribbling on its inputs fails the case), and the output region starts as NaN so an
// element the kernel forgot to write fails too. Float outputs are compared by NMSE with a
// per-element bound; integer outputs (top-k indices) must match bit for bit.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "conformance/op_cases.hpp"
#include "mnemo/abi/backend_abi.h"
#include "mnemo/modules/registry.hpp"

namespace mnemo::conformance {

constexpr uint64_t kGuardBytes = 4096;  // also keeps every tensor offset 4096-aligned

// Backend modules of the build folder (MNEMO_BUILD_BIN) and $MNEMO_BACKEND_PATH.
mnemo::BackendRegistry& harness_registry(const std::string& build_bin);

// Contexts are opened once per device and shared by all cases (opening may start thread pools or
// a driver); closed when the process ends, before the modules are unloaded.
void* open_context(const mnemo_backend_api* api, int32_t device);

struct Comparison {
    std::string failure;  // "" when the output passes
    double nmse = 0.0;
};
// NaN in the reference is a broken case, unless the case says NaN is part of the answer
// (nan_expected): then the backend must give NaN exactly there.
Comparison compare_floats(const std::vector<float>& got, const std::vector<float>& want, double max_nmse,
                          bool nan_expected = false);
std::string compare_exact_i32(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want);

enum class Outcome { Pass, Fail, Unsupported };

struct CaseResult {
    Outcome outcome = Outcome::Fail;
    std::vector<std::string> failures;  // every problem found (guards, inputs, output)
    double nmse = 0.0;                  // float outputs
    double run_ns = 0.0;                // mean graph_run time over `repeats` runs
    std::string unsupported;            // Unsupported: why, as the backend's graph_prepare says it
};

// The CPU thread counts every case runs at: $MNEMO_CONFORMANCE_CPU_THREADS, a comma-separated
// list such as "1,2,3" (0: the module's default, one per hardware thread). Empty when unset, or
// for any module but "cpu": the case runs once, at the context's thread count. The counts matter
// because the CPU kernels split rows, columns and tokens over the pool's threads: 1 runs every
// kernel whole, 2 an even split, 3 an uneven one (with tails on the last thread).
std::vector<int32_t> conformance_thread_counts(const mnemo_backend_api* api);

// Runs case `c` on an opened context. `repeats` > 1 times extra runs (perf mode) after the
// checked first run. Without `repeats`, a CPU case runs once per conformance_thread_counts(api)
// (set_threads before each, the context's default restored after), on the same inputs against
// the one reference; a failure then names the thread count. Never throws: setup failures become
// failures.
CaseResult run_case(const mnemo_backend_api* api, void* ctx, const OpCase& c, int repeats = 1);

}  // namespace mnemo::conformance
