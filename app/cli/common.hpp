// Pieces every subcommand of `mnemo` shares: the model flags, picking the model folder, opening a
// session and tokenizer with error context, and Ctrl-C handling. What other programs need too
// (argument parser, clock, sizes, the default model's places) is in app/common.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "app/args.hpp"
#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::cli {

struct ModelFlags {
    std::string model;  // empty: the bundled default model
    std::string backend = "cpu";
    int32_t device = 0;
    int32_t threads = 0;
    int32_t ctx = 0;
    int32_t cache_dtype = MNEMO_DTYPE_F16;
    SessionOptions::MemoryTables memory_tables = SessionOptions::MemoryTables::Device;
};

// -m/--model, --backend, --device, -t/--threads, -c/--ctx-size, --cache-type, --memory-tables.
void add_model_flags(app::ArgParser& p, ModelFlags& f);

// --cache-type f32|f16|q8_0 into *dtype (a mnemo dtype); any other value is a UsageError
// listing the accepted ones. For commands that do not take the whole set of model flags.
void add_cache_type_flag(app::ArgParser& p, int32_t* dtype);

// --memory-tables device|host into *where; any other value is a UsageError naming both.
void add_memory_tables_flag(app::ArgParser& p, SessionOptions::MemoryTables* where);

// The folder to load: -m when given (must exist), else the bundled default model
// (app::find_default_model).
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

}  // namespace mnemo::cli
