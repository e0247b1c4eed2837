// Reading a whole file safely: every file Mnemo reads whole (configs, tokens, conversations,
// corpora, bank pointers) goes through here, so a hostile path cannot hang the program (a FIFO
// or a device node blocks in open() or never ends) or exhaust memory (/dev/zero, a 7 GB file).
// Only regular files are read; the size is checked before a byte is buffered, and the read stops
// at the cap even if the file grows meanwhile. Errors name the path and say what was expected.
#pragma once

#include <cstdint>
#include <string>
#include "mnemo/api.hpp"

namespace mnemo {

// Caps for the kinds of file read whole. A cap is an upper bound for honest files, generous on
// purpose; a file above it is refused with both sizes named.
inline constexpr uint64_t kMaxSmallFileBytes = 16ull << 20;      // configs, tokens, pointers
inline constexpr uint64_t kMaxDocumentFileBytes = 256ull << 20;  // conversations, corpora, jsonl
inline constexpr uint64_t kMaxTokenizerFileBytes = 512ull << 20; // tokenizer.json / .model

// Opens `path` read-only for reading its contents: refuses anything but a regular file (after
// following symlinks) without blocking on FIFOs or devices. Returns the descriptor (O_CLOEXEC,
// blocking mode restored) and the file's size; throws mnemo::Error naming `path` otherwise.
struct OpenedFile {
    int fd = -1;
    uint64_t size = 0;
};
MNEMO_API OpenedFile open_regular_file(const std::string& path);

// The whole file as bytes. Throws mnemo::Error "PATH: ..." when it is not a regular file, cannot
// be opened or read, or holds more than `max_bytes` ("is 7.0 GB, more than the 16 MiB a ... may
// have"); `what` names the kind of file in that message ("conversation", "access token file").
MNEMO_API std::string read_file_capped(const std::string& path, uint64_t max_bytes,
                                       const std::string& what = "file");

}  // namespace mnemo
