// Fuzz target: arbitrary bytes as a bank manifest (server/src/bank/bank_format.hpp), which a bank
// folder handed over by someone else can hold. manifest_from_json must return a manifest or
// throw mnemo::Error; an accepted one must hold what Bank::open relies on (segments contiguous
// from 0 adding up to count; retired ranges sorted, disjoint, merged and inside [0, count); a
// codec fit's errors finite and >= 0) and survive manifest_to_json -> manifest_from_json unchanged.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bank/bank_format.hpp"
#include "mnemo/error.hpp"

using namespace mnemo::kb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    BankManifest m;
    try {
        m = manifest_from_json(text, "fuzz manifest");
    } catch (const mnemo::Error&) {
        return 0;  // rejected input
    }
    uint64_t next = 0;
    for (const SegmentEntry& s : m.segments) {
        if (s.first_id != next || s.count == 0) std::abort();
        next += s.count;
    }
    if (next != m.count) std::abort();
    uint64_t end = 0;
    for (size_t i = 0; i < m.retired.size(); ++i) {
        const IdRange& r = m.retired[i];
        if (r.count == 0 || (i > 0 && r.first <= end) || uint64_t{r.first} + r.count > m.count) std::abort();
        end = uint64_t{r.first} + r.count;
    }
    if (m.codec_fit && !(std::isfinite(m.codec_fit->keys) && m.codec_fit->keys >= 0 && std::isfinite(m.codec_fit->values) &&
                         m.codec_fit->values >= 0))
        std::abort();
    const std::string once = manifest_to_json(m);
    try {
        if (manifest_to_json(manifest_from_json(once, "again")) != once) std::abort();
    } catch (const mnemo::Error&) {
        std::abort();  // the writer's own output must read back
    }
    return 0;
}
