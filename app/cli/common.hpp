// Pieces every subcommand shares: the model flags, finding the default model, opening a session
// and tokenizer with error context, Ctrl-C handling and human-readable sizes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "args.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::cli {

struct ModelFlags {
    std::string model;  // empty: the bundled default model
    std::string backend = "cpu";
    int32_t device = 0;
    int32_t threads = 0;
    int32_t ctx = 0;
};

// -m/--model, --backend, --device, -t/--threads, -c/--ctx-size.
void add_model_flags(ArgParser& p, ModelFlags& f);

// The folder to load: -m when given (must exist), else the bundled default model
// (<exe>/../share/mnemo/default-model, then the source tree's assets/default-model).
std::string resolve_model_dir(const ModelFlags& f);

SessionOptions session_options(const ModelFlags& f, const std::string& model_dir);
std::unique_ptr<Session> open_session(const SessionOptions& o);
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& model_dir);

// "tokenizer.json (byte-level BPE)" or "tokenizer.model (SentencePiece)": what load_tokenizer uses.
std::string tokenizer_kind(const std::string& model_dir);

// Ctrl-C: the first SIGINT sets the flag (the session's cancel flag) instead of killing the
// process. Installed without SA_RESTART so a blocking read returns with EINTR.
std::atomic<bool>& interrupt_flag();
void install_interrupt_handler();

std::string format_bytes(uint64_t bytes);  // "1.50 GiB"
double now_seconds();                      // monotonic
uint64_t peak_rss_bytes();                 // getrusage ru_maxrss

}  // namespace mnemo::cli
