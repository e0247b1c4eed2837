// Fuzz target: arbitrary bytes as a JSON document. parse must return a value or throw
// mnemo::Error. Accepted documents must survive a dump/parse round trip unchanged, which checks
// the writer's escaping and number formatting against the reader.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    mnemo::json::Value v;
    try {
        v = mnemo::json::parse(text, "fuzz.json");
    } catch (const mnemo::Error&) {
        return 0;  // rejected input
    }
    const std::string once = v.dump();
    try {
        const std::string twice = mnemo::json::parse(once, "dump").dump();
        if (twice != once) std::abort();  // the writer and reader disagree
    } catch (const mnemo::Error&) {
        std::abort();  // our own output must always parse
    }
    return 0;
}
