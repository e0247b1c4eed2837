// compare_backends: one Session per backend in turn, the first that runs is the reference
// backend, the others decode its token sequence (teacher forcing) and are compared with it step by step.
#include "mnemo/session/compare.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/session/sampling.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo {

namespace {

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What the reference backend's run leaves for the others: its logits at every step and its greedy tokens.
struct Reference {
    int32_t vocab = 0;
    std::vector<float> logits;  // [n_steps, vocab]
    std::vector<int32_t> tokens;
    bool ended_turn = false;  // its last token ended the turn
};

// Whether the reference backend's turn ends at a token: an end-of-turn id, or its text completing
// a stop string (decoded as the chat's token loop decodes it, app/common/src/generate.cpp).
class EndOfTurn {
public:
    EndOfTurn(const CompareOptions& o, const Tokenizer* tokenizer)
        : tokens_(o.end_of_turn_tokens), stops_(o.stop_strings) {
        if (!o.stop_strings.empty() && tokenizer != nullptr) decoder_.emplace(*tokenizer, /*skip_special=*/true);
    }
    bool ends(int32_t token) {
        if (std::find(tokens_.begin(), tokens_.end(), token) != tokens_.end()) return true;
        if (!decoder_) return false;
        stops_.push(decoder_->push(token));
        return stops_.stopped();
    }

private:
    const std::vector<int32_t>& tokens_;
    StopMatcher stops_;
    std::optional<StreamDecoder> decoder_;
};

// The backend module and device exist? An explanation for the run's column when not.
std::string availability_error(const BackendRegistry& registry, const BackendSpec& spec, std::string* device_name) {
    const BackendModule* module = registry.find(spec.backend);
    if (module == nullptr) {
        std::string why = "backend '" + spec.backend + "' is not available";
        const std::string file = "mnemo-backend-" + spec.backend;
        for (const LoadError& e : registry.load_errors())
            if (e.path.find(file) != std::string::npos) return why + " (" + e.path + " failed to load: " + e.reason + ")";
        std::string names;
        for (const BackendModule& m : registry.modules()) names += (names.empty() ? "" : ", ") + m.name;
        return why + " (not built or not found; loaded: " + (names.empty() ? "none" : names) + ")";
    }
    const int32_t count = module->api->device_count();
    if (count <= 0) return "backend '" + spec.backend + "' found no devices";
    if (spec.device < 0 || spec.device >= count)
        return "backend '" + spec.backend + "' has " + std::to_string(count) + " device(s); device " +
               std::to_string(spec.device) + " does not exist";
    mnemo_device_info info{};
    if (module->api->device_info(spec.device, &info) == MNEMO_OK)
        *device_name = std::string(info.name, strnlen(info.name, sizeof info.name));
    return "";
}

// Session errors start with "loading model '<dir>': "; the comparison names the model once.
std::string without_model_prefix(const std::string& message, const std::string& model_dir) {
    const std::string prefix = "loading model '" + model_dir + "': ";
    return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

class Runner {
public:
    // `tokenizer` decodes the reference backend's tokens for stop strings (nullptr: none given).
    Runner(const CompareOptions& o, const std::vector<int32_t>& prompt, int32_t n_ctx, const Tokenizer* tokenizer)
        : o_(o), prompt_(prompt), n_ctx_(n_ctx), tokenizer_(tokenizer), sampler_(greedy_params()) {}

    // Runs one backend. With `ref` empty (vocab 0) this run becomes the reference backend's and fills it;
    // otherwise it follows ref's tokens and is compared with its logits.
    void run(const BackendSpec& spec, Reference& ref, std::vector<double>& ref_scale, BackendRun& r) {
        SessionOptions so;
        so.model_dir = o_.model_dir;
        so.backend = spec.backend;
        so.device = spec.device;
        so.n_threads = o_.n_threads;
        so.n_ctx = n_ctx_;
        so.cache_dtype = o_.cache_dtype;
        so.memory_tables = o_.memory_tables;
        so.n_seq = 1;
        so.profile = true;
        so.backends = o_.backend_registry;
        so.plugins = o_.plugin_registry;
        const auto session = Session::open(so);
        session->set_cancel_flag(o_.cancel);
        r.device_name = session->summary().device_name;
        if (o_.memories) {
            std::shared_ptr<MemorySource> memories = o_.memories(*session);
            if (memories) session->set_memory_source(std::move(memories));
        }

        const int32_t T = static_cast<int32_t>(prompt_.size());
        const bool is_ref = ref.vocab == 0;
        // The reference backend runs up to n_generate steps, or to its end of turn; the others
        // follow it over exactly its steps.
        const int32_t n = is_ref ? o_.n_generate : static_cast<int32_t>(ref.tokens.size());
        if (o_.warmup) {
            session->append(0, prompt_);
            session->decode({{prompt_.back(), T, 0, true}});
            session->reset_all();
            session->clear_profile();
        }

        const int32_t vocab = session->vocab_size();
        Reference mine;  // filled when this run is the reference backend's; committed only on success
        if (is_ref) {
            mine.vocab = vocab;
            mine.logits.reserve(static_cast<size_t>(n) * static_cast<size_t>(vocab));
        } else if (vocab != ref.vocab) {
            throw Error("the vocabulary has " + std::to_string(vocab) + " tokens here but " + std::to_string(ref.vocab) +
                        " on the reference backend");
        }
        std::vector<double> scale;
        EndOfTurn end_of_turn(o_, tokenizer_);
        int32_t steps = n;

        double t0 = now_seconds();
        const std::vector<float>* logits = &session->append(0, prompt_);
        r.prompt_seconds = now_seconds() - t0;
        for (int32_t step = 0; step < n; ++step) {
            const float* row = logits->data();
            if (logits->size() != static_cast<size_t>(vocab))
                throw Error("step " + std::to_string(step) + ": the session returned " + std::to_string(logits->size()) +
                            " logits, expected " + std::to_string(vocab));
            const int32_t own = sampler_.sample(row, vocab, {});
            r.tokens.push_back(own);
            int32_t next = own;
            if (is_ref) {
                mine.logits.insert(mine.logits.end(), row, row + vocab);
                mine.tokens.push_back(own);
                double m = 0.0;
                for (int32_t i = 0; i < vocab; ++i) m = std::max(m, static_cast<double>(std::fabs(row[i])));
                scale.push_back(m);
                r.step_max_abs_dlogit.push_back(0.0);
            } else {
                const float* want = ref.logits.data() + static_cast<size_t>(step) * static_cast<size_t>(vocab);
                const double d = max_abs_logit_diff(row, want, static_cast<size_t>(vocab));
                r.step_max_abs_dlogit.push_back(d);
                r.max_abs_dlogit = std::max(r.max_abs_dlogit, d);
                next = ref.tokens[static_cast<size_t>(step)];
                if (own != next && r.first_divergence < 0) {
                    r.first_divergence = step;
                    r.divergence_margin = static_cast<double>(want[next]) - static_cast<double>(want[own]);
                }
            }
            if (is_ref && end_of_turn.ends(own)) {
                steps = step + 1;
                mine.ended_turn = true;
                break;
            }
            if (step + 1 == n) break;
            t0 = now_seconds();
            logits = &session->decode({{next, T + step, 0, true}});
            r.gen_seconds += now_seconds() - t0;
        }
        r.prompt_tps = r.prompt_seconds > 0 ? T / r.prompt_seconds : 0.0;
        r.gen_tps = r.gen_seconds > 0 ? (steps - 1) / r.gen_seconds : 0.0;
        r.ops = session->profile();
        for (const char* c : op_categories()) r.op_times[c] = 0;
        for (const OpProfile& p : r.ops) {
            const std::optional<int32_t> op = op_from_name(p.op);
            r.op_times[op ? op_info(*op).category : "other"] += p.total_ns;
        }
        r.summary = session->summary();
        r.peak_device_bytes = session->summary().device_peak_bytes;
        r.host_device_bytes = session->summary().device_host_bytes;
        if (is_ref) {
            ref = std::move(mine);
            ref_scale = std::move(scale);
        }
    }

private:
    // The sampler's greedy rule (as `mnemo run --greedy`): NaN never wins, ties keep the lower id.
    static SamplingParams greedy_params() {
        SamplingParams p;
        p.temperature = 0.0f;
        p.repeat_penalty = 1.0f;
        return p;
    }

    const CompareOptions& o_;
    const std::vector<int32_t>& prompt_;
    int32_t n_ctx_;
    const Tokenizer* tokenizer_;
    Sampler sampler_;
};

}  // namespace

double max_abs_logit_diff(const float* a, const float* b, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; ++i) {
        if (a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))) continue;
        const double d = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
        m = std::max(m, std::isfinite(d) ? d : std::numeric_limits<double>::infinity());
    }
    return m;
}

std::string BackendSpec::str() const { return device == 0 ? backend : backend + ":" + std::to_string(device); }

BackendSpec parse_backend_spec(std::string_view text) {
    BackendSpec s;
    const size_t colon = text.find(':');
    s.backend = std::string(text.substr(0, colon));
    const auto bad = [&](const std::string& why) {
        return Error("backend '" + std::string(text) + "': " + why + " (expected NAME or NAME:DEVICE, e.g. vulkan:1)");
    };
    if (s.backend.empty()) throw bad("the name is empty");
    for (char c : s.backend)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') throw bad("the name has a '" + std::string(1, c) + "'");
    if (colon != std::string_view::npos) {
        const std::string_view idx = text.substr(colon + 1);
        if (idx.empty() || idx.size() > 6) throw bad("the device index must be a number");
        int32_t v = 0;
        for (char c : idx) {
            if (c < '0' || c > '9') throw bad("the device index must be a number");
            v = v * 10 + (c - '0');
        }
        s.device = v;
    }
    return s;
}

std::vector<BackendSpec> parse_backend_list(std::string_view text) {
    std::vector<BackendSpec> out;
    size_t begin = 0;
    while (true) {
        const size_t comma = text.find(',', begin);
        out.push_back(parse_backend_spec(text.substr(begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin)));
        if (comma == std::string_view::npos) break;
        begin = comma + 1;
    }
    return out;
}

std::vector<int32_t> encode_prompt(const Tokenizer& tokenizer, std::string_view text, bool parse_special) {
    std::vector<int32_t> ids;
    if (tokenizer.add_bos && tokenizer.bos_id) ids.push_back(*tokenizer.bos_id);
    const std::vector<int32_t> encoded = tokenizer.encode(text, parse_special);
    // A prompt that already starts with the BOS text keeps a single BOS.
    const bool starts_with_bos = !ids.empty() && !encoded.empty() && encoded.front() == ids.front();
    ids.insert(ids.end(), encoded.begin() + (starts_with_bos ? 1 : 0), encoded.end());
    return ids;
}

int32_t CompareResult::n_ran() const {
    int32_t n = 0;
    for (const BackendRun& r : runs) n += r.ok() ? 1 : 0;
    return n;
}

CompareResult compare_backends(const CompareOptions& o) {
    if (o.backends.empty()) throw Error("compare: no backends given");
    if (o.n_generate < 1) throw Error("compare: the number of generated tokens must be >= 1, got " + std::to_string(o.n_generate));
    CompareResult result;
    result.prompt_tokens = o.prompt_tokens;
    if (result.prompt_tokens.empty() && !o.prompt_text.empty())
        result.prompt_tokens = encode_prompt(*load_tokenizer(o.model_dir), o.prompt_text);
    if (result.prompt_tokens.empty()) throw Error("compare: the prompt is empty (no token ids, and no text or no BOS token from it)");
    const int64_t need = static_cast<int64_t>(result.prompt_tokens.size()) + o.n_generate;
    if (o.n_ctx > 0 && need > o.n_ctx)
        throw Error("compare: the prompt (" + std::to_string(result.prompt_tokens.size()) + " tokens) and " +
                    std::to_string(o.n_generate) + " generated tokens need " + std::to_string(need) +
                    " positions but the context holds " + std::to_string(o.n_ctx));
    if (need > (int64_t{1} << 30)) throw Error("compare: the prompt and generation need too many positions");
    const int32_t n_ctx = o.n_ctx > 0 ? o.n_ctx : static_cast<int32_t>(need);
    result.n_steps = o.n_generate;

    const BackendRegistry& registry = o.backend_registry ? *o.backend_registry : BackendRegistry::global();
    std::unique_ptr<Tokenizer> tokenizer;
    if (!o.stop_strings.empty()) tokenizer = load_tokenizer(o.model_dir);
    Runner runner(o, result.prompt_tokens, n_ctx, tokenizer.get());
    Reference ref;
    for (const BackendSpec& spec : o.backends) {
        if (o.cancel && o.cancel->load()) throw Cancelled();
        if (o.on_backend_start) o.on_backend_start(spec);
        BackendRun r;
        r.backend = spec.backend;
        r.device = spec.device;
        r.error = availability_error(registry, spec, &r.device_name);
        if (r.ok()) {
            try {
                runner.run(spec, ref, result.ref_step_max_abs_logit, r);
            } catch (const Cancelled&) {
                throw;
            } catch (const std::exception& e) {
                const std::string device_name = r.device_name;
                r = BackendRun{};  // no partial figures next to an error
                r.backend = spec.backend;
                r.device = spec.device;
                r.device_name = device_name;
                r.error = without_model_prefix(e.what(), o.model_dir);
                if (r.error.empty()) r.error = "failed without a message";
            }
        }
        if (r.ok() && result.reference < 0) {
            result.reference = static_cast<int32_t>(result.runs.size());
            result.n_steps = static_cast<int32_t>(ref.tokens.size());
            result.ended_turn = ref.ended_turn;
        }
        result.runs.push_back(std::move(r));
    }
    return result;
}

}  // namespace mnemo
