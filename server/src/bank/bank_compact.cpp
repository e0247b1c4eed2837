#include "bank_compact.hpp"

#include <string_view>

#include "bank.hpp"
#include "bank_version_writer.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::kb {
namespace {

// A segment's texts lines, in id order (blank lines skipped, as the reader skips them).
std::vector<std::string_view> texts_lines(const std::string& bytes) {
    std::vector<std::string_view> out;
    size_t pos = 0;
    while (pos < bytes.size()) {
        size_t end = bytes.find('\n', pos);
        if (end == std::string::npos) end = bytes.size();
        if (end > pos) out.emplace_back(bytes.data() + pos, end - pos);
        pos = end + 1;
    }
    return out;
}

// A texts line under its new id, every other field as it was (metadata included); doc_version
// written out, since a line of a bank older than document versions takes it from its segment's
// name, and its new segment's name is another version's.
std::string renumbered_line(std::string_view line, uint32_t old_id, uint32_t new_id, uint64_t doc_version, const std::string& where) {
    const json::Value v = json::parse(line, where);
    const json::Value* id = v.is_object() ? v.find("id") : nullptr;
    if (!id || !id->is_integer() || id->as_int() != old_id) throw Error(where + ": 'id' must be " + std::to_string(old_id));
    const bool has_version = v.find("doc_version") != nullptr;
    std::vector<std::pair<std::string, json::Value>> fields;
    for (const auto& [key, value] : v.as_object()) {
        if (key == "id") fields.emplace_back(key, json::Value::make_number(new_id, true, new_id));
        else fields.emplace_back(key, value);
        if (key == "doc_id" && !has_version) {
            const auto dv = static_cast<int64_t>(doc_version);
            fields.emplace_back("doc_version", json::Value::make_number(static_cast<double>(dv), true, dv));
        }
    }
    return json::Value::make_object(std::move(fields)).dump() + "\n";
}

}  // namespace

BankCompactReport compact_bank(const BankCompactOptions& o) {
    if (!o.storage) throw Error("compact: no bank storage");
    if (o.segment_records == 0) throw Error("compact: segment_records must be positive");
    BankStorage& st = *o.storage;
    const std::shared_ptr<const Bank> bank = Bank::open(o.storage);  // every hash checked
    BankCompactReport r;
    r.from_version = bank->version();
    r.records_before = bank->count();
    r.records_after = bank->count() - bank->retired_count();
    if (bank->retired_count() == 0) return r;  // nothing retired: nothing to write

    VersionWriter w(st);
    if (!w.current() || w.current()->version != bank->version())
        throw Error("bank " + st.describe() + ": version " + std::to_string(w.version() - 1) + " was published while version " +
                    std::to_string(bank->version()) + " was read; run the command again");
    const BankManifest& old = *w.current();
    BankManifest m = old;
    m.retired.clear();
    m.segments.clear();
    const uint32_t first_retired = old.retired.front().first;
    const MemorySpec& spec = bank->model().spec;
    const auto dim = static_cast<size_t>(spec.retrieval_dim);
    uint32_t next_id = 0;
    size_t n_new = 0;
    std::unique_ptr<SegmentBuilder> open;
    auto flush = [&] {
        if (open && open->count()) {
            m.segments.push_back(w.put_segment(n_new++, *open));
            ++r.segments_written;
        }
        open.reset();
    };
    for (const SegmentEntry& s : old.segments) {
        if (uint64_t{s.first_id} + s.count <= first_retired) {  // before any retired id: kept as it is
            m.segments.push_back(s);
            next_id = s.first_id + s.count;
            ++r.segments_kept;
            continue;
        }
        const std::string texts = read_checked_blob(st, s.texts, "texts");
        const std::vector<std::string_view> lines = texts_lines(texts);
        const std::string where = st.describe() + ": texts '" + printable(s.texts.file) + "'";
        if (lines.size() != s.count)
            throw Error(where + ": " + std::to_string(lines.size()) + " lines, the segment holds " + std::to_string(s.count));
        for (uint32_t i = 0; i < s.count; ++i) {
            const uint32_t id = s.first_id + i;
            if (o.progress && id % 4096 == 0) o.progress(id, old.count);
            if (bank->retired(id)) {
                ++r.retired_removed;
                continue;
            }
            if (!open) open = std::make_unique<SegmentBuilder>(old.record_bytes, next_id, dim);
            const std::string rec = bank->record(id);  // CRC checked here
            const auto memory = decode_memory_record(reinterpret_cast<const uint8_t*>(rec.data()), rec.size(), id, spec, &bank->codec(),
                                                     st.describe() + ": record " + std::to_string(id));
            open->add(encode_memory_record(*memory, next_id, spec, &bank->codec()),
                      renumbered_line(lines[i], id, next_id, bank->reference(id).doc_version, where + ": line " + std::to_string(i + 1)),
                      bank->vector(id));
            ++next_id;
            if (open->count() == o.segment_records) flush();
        }
    }
    flush();
    if (o.progress) o.progress(old.count, old.count);
    m.count = next_id;
    if (m.count != r.records_after)
        throw Error("bank " + st.describe() + ": compacting kept " + std::to_string(m.count) + " records, the bank serves " +
                    std::to_string(r.records_after));
    const WrittenVersion wv = w.publish(std::move(m));
    r.version = wv.manifest.version;
    r.bytes_written = wv.bytes_written;
    return r;
}

}  // namespace mnemo::kb
