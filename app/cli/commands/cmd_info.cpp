// `mnemo info`: what a model folder holds and what it costs to run at the chosen context.
#include <cstdio>

#include "app/measure.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::cli {

namespace {

std::string token_label(const Tokenizer& tok, int32_t id) {
    std::string text;
    try {
        text = tok.token_bytes(id);
    } catch (const std::exception&) {
        text = "?";
    }
    return std::to_string(id) + " '" + printable(text) + "'";  // the vocabulary's text: escaped
}

}  // namespace

int cmd_info(int argc, char** argv) {
    ModelFlags model;
    app::ArgParser p("info", "mnemo info [-m DIR] [options]",
                     "Describe a model: type, plugin, architecture, parameters, weight sizes, KV-cache size at\n"
                     "the chosen context, tokenizer, chat template and special tokens.");
    add_model_flags(p, model);
    if (!p.parse(argc, argv, 2)) return 0;

    const std::string dir = resolve_model_dir(model);
    const auto session = open_session(session_options(model, dir));
    const ModelSummary& s = session->summary();
    std::printf("model:          %s\n", dir.c_str());
    std::printf("model type:     %s\n", s.model_type.c_str());
    std::printf("plugin:         %s\n", s.plugin.c_str());
    std::printf("architecture:   %s\n", s.architecture.c_str());
    std::printf("layers:         %lld, hidden size %lld, trained context %lld\n", static_cast<long long>(s.n_layers),
                static_cast<long long>(s.hidden_size), static_cast<long long>(s.n_ctx_train));
    const double params = static_cast<double>(s.n_params);
    std::printf("parameters:     %lld (%.3f B%s)\n", static_cast<long long>(s.n_params), params / 1e9,
                params < 1e8 ? (" = " + std::to_string(static_cast<int64_t>(params / 1e3 + 0.5)) + " K").c_str() : "");
    // Memory layers and MoE read only the rows / experts a token selects: what one decode token
    // touches is the cost that matters (UltraMem appendix B), next to what must be stored.
    if (s.activated_params > 0 && s.n_params > 0)
        std::printf("activated:      %lld per token (%.1f%% of the parameters)\n",
                    static_cast<long long>(s.activated_params),
                    100.0 * static_cast<double>(s.activated_params) / static_cast<double>(s.n_params));
    std::printf("read per token: %llu weight bytes (%s) for one decode token at batch 1\n",
                static_cast<unsigned long long>(s.decode_weight_bytes), app::format_bytes(s.decode_weight_bytes).c_str());
    std::printf("weight dtypes:  %s\n", s.weight_dtypes.c_str());
    std::printf("weight bytes:   %llu (%s)\n", static_cast<unsigned long long>(s.weight_bytes),
                app::format_bytes(s.weight_bytes).c_str());
    if (s.memory_tables_in_host)
        std::printf("memory tables:  %llu bytes (%s) in host memory, read in place (--memory-tables host)\n",
                    static_cast<unsigned long long>(s.memory_table_bytes), app::format_bytes(s.memory_table_bytes).c_str());
    std::printf("KV/state bytes: %llu (%s) at context %d\n", static_cast<unsigned long long>(s.state_bytes),
                app::format_bytes(s.state_bytes).c_str(), session->n_ctx());
    std::printf("device:         %s (%s)\n", s.device_name.c_str(), s.backend.c_str());

    // The tokenizer and template are described when present; a model without them still has
    // useful information above, so their failures are reported rather than fatal.
    try {
        const auto tok = load_tokenizer(dir);
        std::printf("tokenizer:      %s, %d tokens (model vocab %lld)\n", tokenizer_kind(dir).c_str(),
                    tok->vocab_size(), static_cast<long long>(s.vocab_size));
        std::printf("bos:            %s%s\n", tok->bos_id ? token_label(*tok, *tok->bos_id).c_str() : "none",
                    tok->add_bos ? " (added to prompts)" : "");
        std::printf("eos:            %s\n", tok->eos_id ? token_label(*tok, *tok->eos_id).c_str() : "none");
        std::string stops;
        for (int32_t id : tok->eos_ids) stops += (stops.empty() ? "" : ", ") + token_label(*tok, id);
        std::printf("end tokens:     %s\n", stops.empty() ? "none" : stops.c_str());
    } catch (const std::exception& e) {
        std::printf("tokenizer:      unavailable (%s)\n", printable(e.what()).c_str());
    }
    try {
        std::string note;
        const ChatTemplate tmpl = detect_chat_template(dir, &note);
        std::printf("chat template:  %s%s%s\n", tmpl.name.c_str(), note.empty() ? "" : " - ", printable(note).c_str());
    } catch (const std::exception& e) {
        std::printf("chat template:  unavailable (%s)\n", printable(e.what()).c_str());
    }
    return 0;
}

}  // namespace mnemo::cli
