// A bank version's live documents (server/README.md, "Correcting a bank"): doc_id -> its version
// and live record ids, built once when a version opens. `add` looks up the documents it replaces
// here, `delete` the ones it retires, and the server answers Info's document listing from it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mnemo::kb {

struct BankDocument {
    std::string doc_id;
    // The bank version in which the document's current text was added (0: unknown, a bank written
    // before documents had versions whose segment names do not say either).
    uint64_t version = 0;
    std::vector<uint32_t> ids;  // its live records, ascending
};

class BankDocuments {
public:
    BankDocuments() = default;
    // Records 0..count-1; `doc_of(id)` gives a record's doc_id and version, `live(id)` whether it
    // is served. A doc_id whose records carry several versions (two `add`s of it before
    // replacement existed) takes the newest.
    BankDocuments(uint64_t count, const std::function<std::pair<const std::string*, uint64_t>(uint32_t)>& doc_of,
                  const std::function<bool(uint32_t)>& live);

    // The live document with this doc_id, or nullptr.
    const BankDocument* find(const std::string& doc_id) const;
    // Every live document, sorted by doc_id (byte order).
    const std::vector<BankDocument>& all() const { return docs_; }

private:
    std::vector<BankDocument> docs_;
};

}  // namespace mnemo::kb
