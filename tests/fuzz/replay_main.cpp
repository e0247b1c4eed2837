// Replay driver for fuzz targets when libFuzzer is not available (GCC builds): feeds every file of
// the given corpus folders (or files) to LLVMFuzzerTestOneInput once, plus truncated and
// bit-flipped variants of each, so the target's code runs under the normal test suite. The real
// coverage-guided fuzzing runs in the Clang build (scripts/sanitize.sh).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void run_one(const std::vector<uint8_t>& bytes) {
    // Copy into an exact-size heap block so out-of-bounds reads are caught by sanitizers.
    std::vector<uint8_t> copy(bytes);
    LLVMFuzzerTestOneInput(copy.data(), copy.size());
}

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    for (int i = 1; i < argc; ++i) {
        fs::path p(argv[i]);
        if (fs::is_directory(p)) {
            for (const auto& e : fs::recursive_directory_iterator(p))
                if (e.is_regular_file()) files.push_back(e.path());
        } else if (fs::is_regular_file(p)) {
            files.push_back(p);
        }
    }
    if (files.empty()) {
        std::fprintf(stderr, "replay: no corpus files found\n");
        return 1;
    }
    std::mt19937 rng(12345);
    size_t runs = 0;
    for (const auto& f : files) {
        std::ifstream in(f, std::ios::binary);
        std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        run_one(bytes);
        ++runs;
        for (size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 16) {
            run_one(std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(cut)));
            ++runs;
        }
        for (int k = 0; k < 64 && !bytes.empty(); ++k) {
            std::vector<uint8_t> m(bytes);
            m[rng() % m.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
            run_one(m);
            ++runs;
        }
    }
    std::printf("replay: %zu inputs from %zu corpus files, no crash\n", runs, files.size());
    return 0;
}
