// Fuzz target: arbitrary bytes as tokenizer.json text. Loading may fail with mnemo::Error; when it
// succeeds, encoding, decoding and streaming a few strings must not crash either.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "mnemo/error.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        auto tok = mnemo::load_bpe_tokenizer_json(text, "fuzz/tokenizer.json");
        for (std::string_view s : {std::string_view("Hello world! 123 don't"),
                                   std::string_view("\xF0\x9F\x98\x80 \xE6\x9D\xB1 \xFF\xC3"),
                                   std::string_view("<|endoftext|>  \n\n x"), text.substr(0, 64)}) {
            for (bool special : {false, true}) {
                const auto ids = tok->encode(s, special);
                (void)tok->decode(ids, !special);
                mnemo::StreamDecoder stream(*tok);
                for (int32_t id : ids) (void)stream.push(id);
                (void)stream.finish();
            }
        }
        (void)tok->token_id("a");
        if (tok->vocab_size() > 0) (void)tok->token_bytes(tok->vocab_size() - 1);
    } catch (const mnemo::Error&) {
        // Rejected input: the expected outcome for most fuzz cases.
    }
    return 0;
}
