// Fuzz target: arbitrary bytes as a memory folder (mnemo/memory/memory_folder.hpp). The input is split
// into the folder's four files by a small header (u16 little-endian lengths of manifest.json,
// references.jsonl and vectors.f32; records.bin takes the rest), written to a scratch folder and
// read back both ways the engine reads folders: read_memory_folder (every record), and a
// FolderMemorySource over the model facts the manifest names (retrieval by vector and BM25, then
// every record through the cache). Either works or throws mnemo::Error; a crash, a hang or a
// sanitizer report is a bug. Seeds: tests/fuzz/corpus/memory_folder (tools/fuzz/make_fuzz_seeds.py).
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "mnemo/error.hpp"
#include "mnemo/memory/memory_folder.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path& scratch() {
    static const fs::path dir = fs::temp_directory_path() / ("mnemo-fuzz-memory-folder-" + std::to_string(::getpid()));
    return dir;
}

void put(const fs::path& p, const uint8_t* data, size_t n) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 6) return 0;
    size_t len[3];
    for (int i = 0; i < 3; ++i) len[i] = static_cast<size_t>(data[2 * i]) | static_cast<size_t>(data[2 * i + 1]) << 8;
    size_t at = 6;
    if (len[0] + len[1] + len[2] > size - at) return 0;
    const fs::path& dir = scratch();
    fs::remove_all(dir);
    fs::create_directories(dir);
    put(dir / "manifest.json", data + at, len[0]);
    at += len[0];
    put(dir / "references.jsonl", data + at, len[1]);
    at += len[1];
    put(dir / "vectors.f32", data + at, len[2]);
    at += len[2];
    put(dir / "records.bin", data + at, size - at);
    try {
        const mnemo::MemoryFolderContents c = mnemo::read_memory_folder(dir.string());
        if (c.memories.size() != c.references.size()) std::abort();
        for (const auto& w : c.memories) {
            if (w.vector.size() != static_cast<size_t>(c.model.spec.retrieval_dim)) std::abort();
            for (float x : w.memory.keys)
                if (!std::isfinite(x)) std::abort();
        }
        mnemo::FolderMemorySource vec(dir.string(), c.model, mnemo::RetrievalMode::Vector);
        mnemo::FolderMemorySource lex(dir.string(), c.model, mnemo::RetrievalMode::BM25);
        if (!c.memories.empty()) {
            mnemo::ChunkQuery q;
            q.vector = &c.memories.front().vector;
            q.tokens = &c.references.front().tokens;
            for (const auto& m : vec.retrieve(q, 3))
                if (!m || m->id >= c.memories.size()) std::abort();
            for (const auto& m : lex.retrieve(q, 3))
                if (!m || m->id >= c.memories.size()) std::abort();
        }
    } catch (const mnemo::Error&) {
        // Rejected input: the expected outcome for most fuzz inputs.
    }
    return 0;
}
