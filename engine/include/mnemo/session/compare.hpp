// Running one prompt on several backends and comparing them: prompt and generation speed, time
// per op category, device memory, and how far logits and greedy tokens drift from a reference
// backend.
//
// The first backend that runs is the reference backend (a baseline run, not the ops' reference
// implementation): it decodes greedily and its logits are kept for
// every step (the prompt's last-token logits, then one row per generated token). Every other
// backend is fed the reference backend's tokens (teacher forcing), so its logits are compared position by
// position on the same sequence even after the two would have chosen different tokens, while its
// own greedy choice at each step shows where it first diverges. Backends run one after another,
// each in its own Session, so the memory of one is freed before the next loads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/api.hpp"
#include "mnemo/memory/explicit_memory.hpp"
#include "mnemo/modules/registry.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo {

class Tokenizer;

// One backend device to compare: "cpu", "vulkan" (device 0) or "vulkan:1".
struct MNEMO_API BackendSpec {
    std::string backend;
    int32_t device = 0;
    std::string str() const;  // "vulkan:1"
};

// "name" or "name:index". Throws Error naming the text when it is malformed.
MNEMO_API BackendSpec parse_backend_spec(std::string_view text);
// Comma-separated specs: "cpu,vulkan:1".
MNEMO_API std::vector<BackendSpec> parse_backend_list(std::string_view text);

// The prompt as the model sees it: BOS first when the tokenizer asks for it (once, even when the
// text starts with the BOS text), then the encoded text.
MNEMO_API std::vector<int32_t> encode_prompt(const Tokenizer& tokenizer, std::string_view text, bool parse_special = true);

struct CompareOptions {
    std::string model_dir;
    // The prompt as token ids; when empty, prompt_text is encoded with the model's tokenizer
    // (see encode_prompt).
    std::vector<int32_t> prompt_tokens;
    std::string prompt_text;
    int32_t n_generate = 16;  // greedy tokens per backend (>= 1); one compared logit row each
    // End the steps where the reference backend ends its turn, as a chat does: at a token of
    // `end_of_turn_tokens` (the tokenizer's end-of-sequence ids) or when its decoded text completes
    // one of `stop_strings` (the chat template's end-of-turn markers). That step is the last one,
    // for every backend: the others are compared over the reference backend's steps (its end-of-turn
    // token included), so a backend that would not end there shows as a divergence. Both empty:
    // exactly n_generate steps, which stays the limit either way.
    std::vector<int32_t> end_of_turn_tokens;
    std::vector<std::string> stop_strings;
    // The explicit memories every backend's session reads, made once per backend against its
    // session (which compare_backends then gives it: Session::set_memory_source); empty, or a
    // nullptr made: none. What it throws is that backend's error.
    std::function<std::shared_ptr<MemorySource>(Session&)> memories;
    std::vector<BackendSpec> backends;
    int32_t n_threads = 0;    // 0: each backend's default
    int32_t n_ctx = 0;        // 0: exactly the prompt plus n_generate
    int32_t cache_dtype = MNEMO_DTYPE_F32;  // K/V cache dtype of every backend's session (SessionOptions)
    // Where every backend's session keeps the memory layers' value tables (SessionOptions).
    SessionOptions::MemoryTables memory_tables = SessionOptions::MemoryTables::Device;
    // Run the prompt and one decode step once untimed before measuring, so graph planning and
    // pipeline creation are not counted as prompt or generation time.
    bool warmup = true;
    // Registries to use (nullptr: the global ones).
    const BackendRegistry* backend_registry = nullptr;
    const PluginRegistry* plugin_registry = nullptr;
    const std::atomic<bool>* cancel = nullptr;  // stops between steps: compare_backends throws Cancelled
    std::function<void(const BackendSpec&)> on_backend_start;  // progress, before each backend loads
};

// What one backend did. When it could not run (not built, no such device, an op it lacks, an
// error mid-run), `error` says why and the figures are empty.
struct MNEMO_API BackendRun {
    std::string backend;
    int32_t device = 0;
    std::string device_name;
    std::string error;
    bool ok() const { return error.empty(); }
    ModelSummary summary;  // the session's, after the run (model, weight dtypes, memory)

    double prompt_seconds = 0.0;
    double prompt_tps = 0.0;  // prompt tokens / prompt_seconds
    // Over the decode steps after the prompt (n_generate - 1 of them: the first token comes from
    // the prompt's logits); 0 when there are none.
    double gen_seconds = 0.0;
    double gen_tps = 0.0;
    // Time per op category (op_categories()) and per op, over the timed prompt and decode steps.
    std::map<std::string, uint64_t> op_times;
    std::vector<OpProfile> ops;
    // The most bytes allocated through the device at once (ModelSummary::device_peak_bytes) and
    // how many of those are host memory used in place ("resident", e.g. mmapped CPU weights).
    uint64_t peak_device_bytes = 0;
    uint64_t host_device_bytes = 0;

    // This backend's greedy choice at every step (on the reference backend's sequence).
    std::vector<int32_t> tokens;
    // max |logit - reference backend's logit| at each step, and over all steps (0 for it; +inf
    // when one side is NaN or infinite and the other is not).
    std::vector<double> step_max_abs_dlogit;
    double max_abs_dlogit = 0.0;
    // First step whose greedy token differs from the reference backend's, or -1.
    // divergence_margin: the reference backend's logit of its own token minus its logit of this
    // backend's token at that step (how near a tie it was for the reference backend).
    int32_t first_divergence = -1;
    double divergence_margin = 0.0;
};

struct MNEMO_API CompareResult {
    std::vector<int32_t> prompt_tokens;
    int32_t n_steps = 0;     // compared logit rows per backend (n_generate, or fewer at the end of the turn)
    // The reference backend ended its turn at step n_steps - 1 (CompareOptions::end_of_turn_tokens,
    // stop_strings); false: the steps ran to n_generate (or no backend ran).
    bool ended_turn = false;
    int32_t reference = -1;  // index in runs of the reference backend (the first that ran); -1: none
    // max |logit| of the reference backend at each step: the scale for relative differences.
    std::vector<double> ref_step_max_abs_logit;
    std::vector<BackendRun> runs;  // in the order of CompareOptions::backends

    int32_t n_ran() const;
};

// max |a[i] - b[i]| over n values, the measure compare_backends reports: equal values (the same
// infinity, or both NaN) differ by 0, any other disagreement involving NaN or infinity by +inf, so
// a backend that produces NaN never looks close.
MNEMO_API double max_abs_logit_diff(const float* a, const float* b, size_t n);

// Runs every backend in turn. Throws Error for bad options (no backends, empty prompt, n_generate
// < 1, a context too small) and Cancelled; a backend's own failure is reported in its run.
MNEMO_API CompareResult compare_backends(const CompareOptions& options);

}  // namespace mnemo
