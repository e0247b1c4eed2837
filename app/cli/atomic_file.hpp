// Files written whole or not at all: the text goes to a temporary file beside the target, which
// is renamed over it only once everything is written, so a failed or interrupted run never leaves
// a half-written report where a reader expects a complete one.
#pragma once

#include <string>

namespace mnemo::cli {

// Throws mnemo::Error naming `path` when the folder is missing or not writable, or a write fails
// (the temporary file is removed).
void write_file_atomically(const std::string& path, const std::string& text);

// Fails early, before a long run, when `path` could not be written: its folder is missing or not
// writable, or it names a folder. Writes nothing.
void check_writable(const std::string& path, const std::string& flag);

}  // namespace mnemo::cli
