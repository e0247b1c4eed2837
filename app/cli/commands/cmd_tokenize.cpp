// `mnemo tokenize`: a text's token ids under a model's tokenizer, as llama-tokenize prints them.
// The model is a folder (tokenizer.json / tokenizer.model) or a GGUF file, whose metadata is
// enough: a vocab-only GGUF without tensors tokenizes too. Only the tokenizer is loaded.
#include <cstdio>

#include "commands.hpp"
#include "common.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::cli {

int cmd_tokenize(int argc, char** argv) {
    std::string model, prompt, file;
    bool ids_only = false, no_bos = false, no_parse_special = false;
    app::ArgParser p("tokenize", "mnemo tokenize [-m DIR|FILE.gguf] (-p TEXT | -f FILE) [--ids] [--no-bos]",
                     "Print the tokens of a text under the model's tokenizer: one line per token, its id and its\n"
                     "text ('ID 'PIECE'', the piece escaped where it is not printable), or with --ids the ids on one\n"
                     "line separated by spaces. The model is a model folder or a GGUF file (a vocab-only GGUF is\n"
                     "enough). Special tokens written in the text (\"<|im_start|>\", \"</s>\") are parsed as such;\n"
                     "the BOS (and EOS) the model adds to a prompt are included unless --no-bos.");
    p.string_opt("-m,--model", "DIR|FILE", "model folder or GGUF file (default: the bundled default model)", &model)
        .string_opt("-p,--prompt", "TEXT", "the text to tokenize", &prompt)
        .string_opt("-f,--file", "FILE", "tokenize the contents of FILE (as they are, newlines included)", &file)
        .flag("--ids", "print only the ids, on one line separated by spaces", &ids_only)
        .flag("--no-bos", "leave out the BOS (and EOS) tokens the model adds to a text", &no_bos)
        .flag("--no-parse-special", "tokenize special tokens written in the text as plain text", &no_parse_special);
    if (!p.parse(argc, argv, 2)) return 0;
    if (p.given("-p") == p.given("-f")) throw app::UsageError("give the text with exactly one of -p TEXT or -f FILE");

    const std::string text = p.given("-f") ? read_file_capped(file, kMaxDocumentFileBytes, "text file") : prompt;
    const std::unique_ptr<Tokenizer> tok = open_tokenizer(resolve_model_dir(ModelFlags{model}));  // a folder or a GGUF file
    std::vector<int32_t> ids;
    if (!no_bos && tok->add_bos && tok->bos_id) ids.push_back(*tok->bos_id);
    for (int32_t id : tok->encode(text, !no_parse_special)) ids.push_back(id);
    if (!no_bos && tok->add_eos && tok->eos_id) ids.push_back(*tok->eos_id);

    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids_only) {
            if (i) out += ' ';
            out += std::to_string(ids[i]);
        } else {
            out += std::to_string(ids[i]) + " '" + printable(tok->token_bytes(ids[i])) + "'\n";
        }
    }
    if (ids_only) out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}

}  // namespace mnemo::cli
