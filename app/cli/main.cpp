// `mnemo` dispatcher: picks the subcommand and maps errors to exit codes
// (0 ok, 1 runtime error, 2 usage error).
#include "app/dispatch.hpp"
#include "commands.hpp"

namespace {

using mnemo::app::Command;

const Command kCommands[] = {
    {"run", mnemo::cli::cmd_run, "generate text from a prompt"},
    {"chat", mnemo::cli::cmd_chat, "interactive chat using the model's chat template"},
    {"serve", mnemo::cli::cmd_serve, "serve the model over the OpenAI HTTP API (continuous batching, explicit memories)"},
    {"memorize", mnemo::cli::cmd_memorize, "write explicit memories of a text corpus for a model that reads them (memory3)"},
    {"ask", mnemo::cli::cmd_ask, "ask one question (chat template, greedy) and show the memories the answer read"},
    {"eval", mnemo::cli::cmd_eval, "score the model on questions with known answers (exact and contains match)"},
    {"logits", mnemo::cli::cmd_logits, "write the logits of a token sequence to an .npy file"},
    {"perplexity", mnemo::cli::cmd_perplexity, "perplexity on a text (llama-perplexity chunks); KL divergence against a base model's file"},
    {"bench", mnemo::cli::cmd_bench, "measure prompt and generation speed (llama-bench style)"},
    {"compare", mnemo::cli::cmd_compare, "run one prompt on several backends: speed, memory, logit differences"},
    {"info", mnemo::cli::cmd_info, "describe a model: architecture, sizes, tokenizer, template"},
    {"quantize", mnemo::cli::cmd_quantize, "write a model folder as one GGUF file: f32, f16, bf16, q8_0 or q4_0 weights"},
    {"tokenize", mnemo::cli::cmd_tokenize, "print the token ids of a text (model folder or GGUF file, vocab-only is enough)"},
    {"devices", mnemo::cli::cmd_devices, "list backend modules and their devices"},
    {"plugins", mnemo::cli::cmd_plugins, "list model plugins and the model types they load"},
};

}  // namespace

int main(int argc, char** argv) { return mnemo::app::dispatch("mnemo", MNEMO_VERSION, "", kCommands, argc, argv); }
